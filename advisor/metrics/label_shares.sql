-- metric: label_shares
-- doc: Per label of a window set (m_windows), each timeline class's nanoseconds inside the label's windows, summed straight from the probes (no per-window rows: a windows metric may hold millions). Query it with windows=metrics.WindowSet.of(...), or call metrics.shares_by_label.
-- uses: window_probes
WITH lab AS (SELECT label, row_number() OVER (ORDER BY label) AS li FROM (SELECT DISTINCT label FROM m_windows)),
wl AS (SELECT w.win_id, l.li FROM m_windows w JOIN lab l USING (label)),
by_cls AS (
    SELECT wl.li, p.k, sum(p.ns) AS ns FROM m_window_probes p JOIN wl USING (win_id) GROUP BY ALL
),
cls AS (SELECT DISTINCT k, cls FROM m_timeline)
SELECT l.label, c.cls, b.ns FROM by_cls b JOIN lab l USING (li) JOIN cls c USING (k)
