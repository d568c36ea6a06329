"""The exception every Python front end raises for bad input or a refused merge."""


class MergeError(ValueError):
    """A merge refused (bad options, bad source rows, a guard), with the message of the
    README's error catalogue. The target is exactly as it was."""
