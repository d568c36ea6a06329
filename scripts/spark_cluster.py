"""A standalone Spark cluster with a Thrift server, from the pyspark wheel alone.

What a user with a real Spark server has: a master, a worker whose executors are separate JVMs,
and a `HiveThriftServer2` submitted to that master, which dbt-spark's `method: thrift` talks to.
Tables are Iceberg tables in a Hive metastore (embedded Derby) kept in the state folder.

    python scripts/spark_cluster.py start  [--dir DIR] [--thrift-port 10000] ...
    python scripts/spark_cluster.py status [--dir DIR]
    python scripts/spark_cluster.py stop   [--dir DIR]

The state folder holds the metastore, the warehouse, the logs and `cluster.json` (ports and the
PIDs of the three JVMs). `stop` stops exactly those PIDs (and the executors their worker
launched), Thrift server first, then worker, then master. Tests import `start` and `stop`.
Only the standard library is used: the test process and users' shells import this file as is.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / ".state" / "spark_cluster"
ICEBERG_JAR_NAME = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
DEFAULT_PORTS = {"master": 7077, "thrift": 10000, "master_ui": 18080, "worker_ui": 18081}
#: the order in which `stop` stops the JVMs
STOP_ORDER = ("thrift", "worker", "master")
#: a word of each JVM's command line, checked before a recorded PID is signalled
MAIN_CLASS = {
    "master": "org.apache.spark.deploy.master.Master",
    "worker": "org.apache.spark.deploy.worker.Worker",
    "thrift": "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
}
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"

# Spark logs INFO to the console by default (one line per task); WARN keeps the logs small.
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.thrift.name = org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
logger.thrift.level = info
"""


class ClusterError(RuntimeError):
    pass


@dataclass
class Cluster:
    """A started cluster, as recorded in `<dir>/cluster.json`."""

    dir: str
    ports: dict[str, int]
    pids: dict[str, int] = field(default_factory=dict)
    started_seconds: float = 0.0

    @property
    def thrift_port(self) -> int:
        return self.ports["thrift"]

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.ports['master']}"


# ------------------------------------------------------------------ locations


def spark_home() -> Path:
    """SPARK_HOME, else the pyspark package (its wheel ships bin/ and jars/, no sbin/)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def iceberg_jar() -> str:
    """ICEBERG_JAR, else the Iceberg Spark runtime shipped by snowpark-connect-deps-iceberg."""
    if os.environ.get("ICEBERG_JAR"):
        return os.environ["ICEBERG_JAR"]
    import snowpark_connect_deps_iceberg

    return str(snowpark_connect_deps_iceberg.get_jar_path(ICEBERG_JAR_NAME))


def _record(state: Path) -> Path:
    return state / "cluster.json"


def load(state: str | Path) -> Cluster | None:
    path = _record(Path(state))
    if not path.exists():
        return None
    return Cluster(**json.loads(path.read_text()))


# ------------------------------------------------------------------ processes and ports


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def choose_ports(wanted: dict[str, int]) -> dict[str, int]:
    """`wanted`, with a busy port replaced by a free one (0 asks for a free one)."""
    ports: dict[str, int] = {}
    for name, port in wanted.items():
        while not port or not _port_free(port) or port in ports.values():
            port = _free_port()
        ports[name] = port
    return ports


def accepts(port: int, host: str = "localhost") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent PID) of a process, None if it does not exist."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def alive(pid: int) -> bool:
    stat = _stat(pid)
    if stat is None:
        return False
    if stat[0] == "Z":  # exited; reap it if it is our child
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return True


def _is_ours(pid: int, role: str) -> bool:
    """The recorded PID still runs the JVM we started (not a reused PID)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return MAIN_CLASS[role] in cmdline


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (a worker's executor JVMs)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat:
                children.setdefault(stat[1], []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = [p for p in pids if alive(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"({path} missing)"
    return "\n".join(text[-lines:])


def _log_tails(state: Path) -> str:
    return "\n".join(
        f"--- {role}.log (last lines)\n{_tail(state / 'logs' / f'{role}.log')}"
        for role in ("master", "worker", "thrift")
    )


# ------------------------------------------------------------------ start


def thrift_server_conf(state: Path, jar: str) -> dict[str, str]:
    """The Thrift server's Spark conf: Iceberg tables in a Hive metastore in `state`, configured
    like the integration profile's `spark` (session) target."""
    return {
        "spark.executor.memory": "768m",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={state} {JVM_OPTIONS}",
        # dbt's asynchronous statements load Iceberg through the driver's class path too.
        "spark.driver.extraClassPath": jar,
        "spark.jars": jar,
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
        # Iceberg's Hive lock needs transaction tables the embedded Derby metastore lacks.
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
        # DROP TABLE of a non-Iceberg table must remove its files.
        "spark.sql.legacy.useV1Command": "true",
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={state}/metastore_db;create=true"
        ),
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        # Iceberg, not Hive, owns the schema (on_schema_change drops and reorders columns).
        "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes": "false",
        "spark.sql.warehouse.dir": str(state / "warehouse"),
        "spark.local.dir": str(state / "tmp"),
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def _spawn(state: Path, role: str, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    # Own session: a Ctrl-C in the terminal reaches the test process, whose clean-up then stops
    # the JVMs in order, instead of killing all of them at once.
    with open(state / "logs" / f"{role}.log", "wb") as log:
        return subprocess.Popen(
            cmd, cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )


def start(
    state: str | Path = DEFAULT_DIR,
    ports: dict[str, int] | None = None,
    timeout: float = 240.0,
    driver_memory: str = "1g",
    conf: dict[str, str] | None = None,
) -> Cluster:
    """Start master, worker and Thrift server; return once the Thrift port accepts connections.

    `conf` overrides or adds to the Thrift server's Spark conf (`thrift_server_conf`), e.g. the
    benchmark's JVM options and Spark UI. A busy port is replaced by a free one (see
    `Cluster.ports`). On failure or timeout the started JVMs are stopped and the error carries
    the tail of each log.
    """
    state = Path(state).resolve()
    previous = load(state)
    if previous and any(alive(p) for p in previous.pids.values()):
        raise ClusterError(
            f"a cluster recorded in {_record(state)} is still running (PIDs {previous.pids});"
            " stop it first"
        )
    for sub in ("logs", "work", "tmp", "conf"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / "conf" / "log4j2.properties").write_text(LOG4J2)
    home = spark_home()
    jar = iceberg_jar()
    if not Path(jar).is_file():  # Spark would only warn, and every Iceberg statement fail
        raise ClusterError(f"Iceberg runtime jar not found: {jar} (set ICEBERG_JAR)")
    cluster = Cluster(str(state), choose_ports({**DEFAULT_PORTS, **(ports or {})}))
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_CONF_DIR": str(state / "conf"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(state / "work"),
        "SPARK_DAEMON_MEMORY": "512m",
        "SPARK_DAEMON_JAVA_OPTS": JVM_OPTIONS,
    }
    began = time.monotonic()
    procs: dict[str, subprocess.Popen] = {}

    def record() -> None:
        cluster.pids = {role: p.pid for role, p in procs.items()}
        _record(state).write_text(json.dumps(asdict(cluster), indent=2) + "\n")

    def fail(why: str) -> ClusterError:
        stop(state)
        return ClusterError(f"Spark cluster in {state}: {why}\n{_log_tails(state)}")

    def wait_for(port: int, role: str, deadline: float) -> None:
        while not accepts(port, "127.0.0.1" if role == "master" else "localhost"):
            dead = [r for r, p in procs.items() if p.poll() is not None]
            if dead:
                raise fail(f"{', '.join(dead)} exited before {role} port {port} accepted")
            if time.monotonic() > deadline:
                raise fail(f"{role} port {port} not accepting after {timeout:.0f} s")
            time.sleep(0.5)

    deadline = began + timeout
    p = cluster.ports
    cls = str(home / "bin" / "spark-class")
    procs["master"] = _spawn(state, "master", [
        cls, MAIN_CLASS["master"], "--host", "127.0.0.1",
        "--port", str(p["master"]), "--webui-port", str(p["master_ui"]),
    ], env)
    record()
    try:
        wait_for(p["master"], "master", deadline)
        procs["worker"] = _spawn(state, "worker", [
            cls, MAIN_CLASS["worker"], cluster.master_url, "--host", "127.0.0.1",
            "--cores", "2", "--memory", "2g", "--webui-port", str(p["worker_ui"]),
        ], env)
        record()
        submit = [str(home / "bin" / "spark-submit"), "--master", cluster.master_url,
                  "--class", MAIN_CLASS["thrift"], "--name", "dbt_merge thrift server",
                  "--driver-memory", driver_memory]
        for key, value in {**thrift_server_conf(state, jar), **(conf or {})}.items():
            submit += ["--conf", f"{key}={value}"]
        submit += ["--hiveconf", f"hive.server2.thrift.port={p['thrift']}",
                   "--hiveconf", "hive.server2.thrift.bind.host=localhost", "spark-internal"]
        procs["thrift"] = _spawn(state, "thrift", submit, env)
        record()
        wait_for(p["thrift"], "thrift", deadline)
    except BaseException as e:  # KeyboardInterrupt too: never leave half a cluster running
        if not isinstance(e, ClusterError):
            stop(state)
        raise
    cluster.started_seconds = round(time.monotonic() - began, 1)
    record()
    return cluster


# ------------------------------------------------------------------ stop and status


def stop(state: str | Path = DEFAULT_DIR, grace: float = 30.0) -> list[str]:
    """Stop the recorded JVMs in order (Thrift server, worker, master): SIGTERM, wait up to
    `grace` seconds, then SIGKILL. Only recorded PIDs that still run the JVM we started are
    signalled, and the executors a worker launched. Returns what was done, one line each."""
    state = Path(state).resolve()
    cluster = load(state)
    done: list[str] = []
    if cluster is None:
        return done
    for role in STOP_ORDER:
        pid = cluster.pids.get(role)
        if not pid or not alive(pid) or not _is_ours(pid, role):
            continue
        group = [pid, *_descendants(pid)]
        os.kill(pid, signal.SIGTERM)
        left = _wait_gone(group, grace)
        for straggler in left:
            os.kill(straggler, signal.SIGKILL)
        if left:
            _wait_gone(left, 10)
        done.append(f"{role} {pid} stopped" + (f" (SIGKILL: {left})" if left else ""))
    cluster.pids = {}
    _record(state).write_text(json.dumps(asdict(cluster), indent=2) + "\n")
    return done


def status(state: str | Path = DEFAULT_DIR) -> dict:
    cluster = load(state)
    if cluster is None:
        return {"dir": str(state), "running": False}
    running = {role: pid for role, pid in cluster.pids.items() if alive(pid)}
    return {
        "dir": cluster.dir,
        "running": bool(running),
        "pids": running,
        "ports": cluster.ports,
        "thrift_accepting": accepts(cluster.thrift_port),
    }


# ------------------------------------------------------------------ command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--dir", default=str(DEFAULT_DIR), help="state folder (%(default)s)")
    for name, port in DEFAULT_PORTS.items():
        parser.add_argument(f"--{name.replace('_', '-')}-port", type=int, default=port,
                            dest=name, help=f"(default {port}; a busy port is replaced)")
    parser.add_argument("--timeout", type=float, default=240.0,
                        help="seconds to wait for the Thrift port (%(default)s)")
    args = parser.parse_args(argv)
    if args.command == "start":
        try:
            cluster = start(args.dir, {n: getattr(args, n) for n in DEFAULT_PORTS}, args.timeout)
        except ClusterError as e:
            print(e, file=sys.stderr)
            return 1
        print(json.dumps(asdict(cluster), indent=2))
        print(f"Thrift server on localhost:{cluster.thrift_port} after "
              f"{cluster.started_seconds} s; for the integration profile's spark_thrift target:"
              f"\n  export DBT_MERGE_THRIFT_PORT={cluster.thrift_port}", file=sys.stderr)
    elif args.command == "stop":
        for line in stop(args.dir):
            print(line)
    else:
        print(json.dumps(status(args.dir), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
