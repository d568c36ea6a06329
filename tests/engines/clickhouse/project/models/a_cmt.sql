select * from {{ source('ch', 'cmt') }}
