select * from {{ source('ch_raw', 'coal') }}
