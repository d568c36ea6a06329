select * from {{ source('ch', 'coal') }}
