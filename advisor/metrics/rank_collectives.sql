-- metric: rank_collectives
-- doc: One rank file's communication kernels as the Dask map writes them for the cross-rank reduce (advisor.distributed.mapreduce): the collectives rows of source kernel, tagged with the file's index ($file_idx) and moved onto the run clock a directory read would give them ($shift_ns: the file's baseTimeNanoseconds against the run's earliest).
SELECT $file_idx::INTEGER AS file_idx, rank, device_id, stream_id, start_ns + $shift_ns::BIGINT AS start_ns,
    end_ns + $shift_ns::BIGINT AS end_ns, kind, bytes, dtype, communicator, group_size, name_id, source
FROM collectives
WHERE source = 'kernel'
