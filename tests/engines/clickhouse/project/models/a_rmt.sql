select * from {{ source('ch', 'rmt') }}
