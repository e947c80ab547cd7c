-- metric: pageable_copies
-- doc: Per device and direction, host<->device copies touching pageable host memory (on a device the trace marks steps for, metric step_windows, a direction counts only where a pageable copy of it overlaps a step, and then with its copies outside the steps, warm-up iterations' included: copies only before or after the steps, an input uploaded once or a result read back once, are not the loop's), with the pinned bandwidth of same-direction copies of at least $min_ref_bytes measured in this trace (null when there are none) and the time a pinned copy at that bandwidth (or $assumed_bytes_per_ns) plus $latency_ns would have taken.
-- uses: step_windows
WITH c AS (
    SELECT device_id, copy_kind, bytes, start_ns, end_ns, end_ns - start_ns AS dur_ns,
        (src_kind = 'pageable' OR dst_kind = 'pageable') AS pageable,
        (src_kind = 'pinned' OR dst_kind = 'pinned') AS pinned
    FROM memops
    WHERE op = 'memcpy' AND copy_kind IN ('HtoD', 'DtoH') AND end_ns > start_ns AND bytes IS NOT NULL
),
in_steps AS (  -- directions with a pageable copy overlapping a step of its device (the device in the high bits: an
               -- IEJoin)
    SELECT DISTINCT c.device_id, c.copy_kind
    FROM (SELECT *, (device_id::HUGEINT << 64) + start_ns AS ks, (device_id::HUGEINT << 64) + end_ns AS ke
          FROM c WHERE pageable) c
    JOIN (SELECT (device_id::HUGEINT << 64) + start_ns AS ks, (device_id::HUGEINT << 64) + end_ns AS ke
          FROM m_step_windows) w
      ON c.ks < w.ke AND c.ke > w.ks
),
loop AS (  -- the pageable copies that count: all of a device with no steps, else those of a direction its steps copy
    SELECT c.* FROM c
    WHERE c.pageable AND (c.device_id NOT IN (SELECT device_id FROM m_step_windows)
        OR (c.device_id, c.copy_kind) IN (SELECT (device_id, copy_kind) FROM in_steps))
),
ref AS (
    SELECT copy_kind, sum(bytes)::DOUBLE / sum(dur_ns) AS pinned_bytes_per_ns, count(*) AS n_ref
    FROM c WHERE pinned AND bytes >= $min_ref_bytes
    GROUP BY copy_kind
)
SELECT c.device_id, c.copy_kind, count(*) AS n_copies, sum(c.bytes) AS bytes, sum(c.dur_ns) AS dur_ns,
    min(c.start_ns) AS start_ns, max(c.end_ns) AS end_ns,
    any_value(r.pinned_bytes_per_ns) AS pinned_bytes_per_ns, coalesce(any_value(r.n_ref), 0) AS n_ref,
    sum(least(c.dur_ns, $latency_ns + c.bytes / coalesce(r.pinned_bytes_per_ns, $assumed_bytes_per_ns)))
        AS pinned_est_ns
FROM loop c LEFT JOIN ref r USING (copy_kind)
GROUP BY c.device_id, c.copy_kind
ORDER BY dur_ns DESC
