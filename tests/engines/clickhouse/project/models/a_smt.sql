select * from {{ source('ch', 'smt') }}
