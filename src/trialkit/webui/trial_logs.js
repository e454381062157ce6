// A trial's log lines by level and rank: what the logs view's filters pick from.
// Mirrors trialkit.rest.log_labeller / log_line_shown (`trialkit t logs --level/--rank`): the
// same rules, tested on the same log (tests/unit/rest/test_log_levels.py).

/** Python's logging levels, lowest first (WARN and FATAL as their usual names). */
export const LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"];
const ALIASES = { WARN: "WARNING", FATAL: "CRITICAL" };
// "[rank=N] || " (trialkit.launch.wrap_rank, Determined's format), then the line itself.
const RANK = /^\[rank=(\d+)\] \|\| /;
// A level at the start of the line: trialkit's format ("INFO: [pid] name: ...") and logging's
// default ("WARNING:root:..."), or after a timestamp ("2026-01-01 10:00:00,123 ERROR ...").
const LEVEL = /^(?:[\d-]+[ T][\d:.,]+\s+)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b[:\s]/;

/**
 * A labeller of a log's lines, fed in order: each line's rank (null without the prefix) and
 * level. A line without a level of its own (a traceback, a continued message) has the level of
 * the last line of its rank that had one; before any, null.
 */
export function logLabeller() {
  const last = new Map(); // rank -> level of its latest line with one
  return (line) => {
    const r = RANK.exec(line);
    const rank = r ? Number(r[1]) : null;
    const found = LEVEL.exec(r ? line.slice(r[0].length) : line);
    const level = found ? ALIASES[found[1]] ?? found[1] : last.get(rank) ?? null;
    if (found) last.set(rank, level);
    return { rank, level };
  };
}

/** Whether a labelled line passes the filters: its level at least `minLevel` ("" for any, and
 * then lines without a level too) and its rank `rank` ("" for any). */
export function logLineShown(l, minLevel, rank) {
  if (minLevel && (l.level === null || LEVELS.indexOf(l.level) < LEVELS.indexOf(minLevel))) return false;
  return rank === "" || String(l.rank) === rank;
}
