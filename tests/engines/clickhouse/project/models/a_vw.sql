select * from {{ source('ch', 'vw') }}
