-- metric: range_phases
-- doc: Host range names (NVTX, user annotations: ranges on no device) that say which phase the host was in: 'compile' (JIT compilation, autotuning, graph lowering; not Inductor's '## Call CompiledFxGraph' ranges, which run a compiled graph every step), 'startup' (init, set-up, warm-up), 'comm' (host-side communication: MPI, NCCL, Gloo, send/receive) or 'io' (loading, reading, checkpointing, moving data); one row per name that names one (c), each name classified once, however many ranges carry it. DataLoader ranges are input already (host_classes) and are not listed, nor are the data-parallel wrappers' hooks (FSDP, DDP: their shards and prefetches are parameters, not data). idle_claims reads it to name the phase an idle gap falls in.
-- materialize: true
-- keep: false
-- A table of its own, not a CTE of idle_claims: there DuckDB estimated the few classified names at the size of the
-- ranges table and built its hash join on the millions of ranges (0.3-0.4 s of 3.8-4.2 on a 0.9 GB nsys export).
SELECT * FROM (
    SELECT name_id,
        CASE
            WHEN regexp_matches(ln, 'dataloader') THEN NULL  -- the DataLoader is input already (host_classes)
            -- Inductor's '## Call CompiledFxGraph <hash> ##' runs a compiled graph every step (its dispatch is the
            -- host's per-call cost), it does not compile one
            WHEN starts_with(ln, '## call compiledfxgraph') THEN NULL
            -- the data-parallel wrappers' own hooks ('FullyShardedDataParallel._pre_backward_prefetch', 'FSDP::
            -- pre_forward', 'DistributedDataParallel.forward') are the wrapper's host work around the model: their
            -- 'shard' and 'prefetch' are parameters, not input data
            WHEN regexp_matches(ln, 'fullyshardeddataparallel|distributeddataparallel|(^|[^a-z])fsdp') THEN NULL
            WHEN regexp_matches(ln, 'compil|nvrtc|(^|[^a-z])jit|autotun|inductor|dynamo|codegen|ptxas|lowering')
                THEN 'compile'
            WHEN regexp_matches(ln, 'comm_?init|init_?rank|(^|[^a-z])init|setup|set_up|warm_?up|start_?up|bootstrap')
                THEN 'startup'
            WHEN regexp_matches(ln, '^mpi_|all_?reduce|all_?gather|all_?to_?all|reduce_?scatter|broadcast|barrier|'
                                    || 'nccl|gloo|send_?recv|(^|[^a-z])i?send($|[^a-z])|(^|[^a-z])i?recv($|[^a-z])')
                THEN 'comm'
            WHEN regexp_matches(ln, 'load|read|shard|prefetch|checkpoint|ckpt|(^|[^a-z])save|weight|fetch|download|'
                                    || 'deserial|dataset|upload|staging|h2d|to_device|offload')
                THEN 'io'
        END AS c
    FROM (SELECT DISTINCT name_id FROM ranges WHERE device_id IS NULL) k
    JOIN (SELECT string_id, lower(value) AS ln FROM strings) s ON s.string_id = k.name_id
) WHERE c IS NOT NULL
