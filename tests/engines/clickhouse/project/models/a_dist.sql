select * from {{ source('ch', 'dist') }}
