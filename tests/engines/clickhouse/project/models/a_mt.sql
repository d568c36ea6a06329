select * from {{ source('ch', 'mt') }}
