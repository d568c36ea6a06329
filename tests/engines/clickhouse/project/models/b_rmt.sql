select * from {{ source('ch_raw', 'rmt') }}
