select * from {{ source('ch_raw', 'vcmt') }}
