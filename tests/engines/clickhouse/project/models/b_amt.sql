select * from {{ source('ch_raw', 'amt') }}
