select * from {{ source('ch', 'logt') }}
