select * from {{ source('ch_raw', 'cmt') }}
