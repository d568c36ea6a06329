select * from {{ source('ch_raw', 'smt') }}
