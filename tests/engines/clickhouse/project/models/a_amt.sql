select * from {{ source('ch', 'amt') }}
