-- metric: blocking_call_list
-- doc: Each host API call whose lower-cased name matches $pattern and not $exclude, once per device its process feeds (device_pids): device_id, start_ns, call_ns. The rules on blocking calls read it to tell calls that recur in the loop from start-up ones (windows_calls merges back-to-back calls into one window, so its windows cannot be cut at an iteration boundary).
-- uses: device_pids
SELECT p.device_id, a.start_ns, a.end_ns - a.start_ns AS call_ns
FROM api_calls a JOIN m_device_pids p ON p.pid = a.pid
WHERE a.name_id IN (SELECT string_id FROM strings
                    WHERE regexp_matches(lower(value), $pattern) AND NOT regexp_matches(lower(value), $exclude))
  AND a.end_ns >= a.start_ns
ORDER BY p.device_id, a.start_ns
