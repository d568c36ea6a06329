select * from {{ source('ch', 'vcmt') }}
