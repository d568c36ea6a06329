select * from {{ source('ch', 'mv') }}
