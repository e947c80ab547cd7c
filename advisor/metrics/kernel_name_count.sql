-- metric: kernel_name_count
-- doc: How many kernels are named $name.
-- keep: false
SELECT count(*) AS n FROM kernels k JOIN strings s ON s.string_id = k.name_id WHERE s.value = $name
