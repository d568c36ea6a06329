select * from {{ source('ch_raw', 'mt') }}
