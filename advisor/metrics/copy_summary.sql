-- metric: copy_summary
-- doc: Memory copies and memsets per device by kind (op memcpy/memset; copy direction HtoD, DtoH, DtoD, HtoH, PtoP; source and destination memory: pageable, pinned, device, managed, array): how many, bytes (null where the trace records no size), summed durations and the largest one. Pageable host memory in a copy is what IO001 prices; this is the table an engineer reads first (nsys stats cuda_gpu_mem_size_sum / time_sum, per kind).
SELECT device_id, op, copy_kind, src_kind, dst_kind, count(*) AS count, sum(bytes)::BIGINT AS bytes,
       sum(end_ns - start_ns)::BIGINT AS total_ns, max(end_ns - start_ns)::BIGINT AS max_ns
FROM memops
GROUP BY ALL
ORDER BY device_id, total_ns DESC, op, copy_kind, src_kind, dst_kind
