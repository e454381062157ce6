// A search's analysis, computed in the browser from its trials: how much each hyperparameter
// explains of the searcher metric (pure functions, no DOM).

/** Each value's rank (1 = smallest), ties given their average rank. */
export function ranks(values) {
  const order = values.map((v, i) => [v, i]).sort((a, b) => a[0] - b[0]);
  const out = new Array(values.length);
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j + 1 < order.length && order[j + 1][0] === order[i][0]) j++;
    for (let k = i; k <= j; k++) out[order[k][1]] = (i + j) / 2 + 1;
    i = j + 1;
  }
  return out;
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Pearson's correlation of xs and ys; null when either does not vary. */
export function pearson(xs, ys) {
  const mx = mean(xs), my = mean(ys);
  let sxy = 0, sxx = 0, syy = 0;
  xs.forEach((x, i) => { sxy += (x - mx) * (ys[i] - my); sxx += (x - mx) ** 2; syy += (ys[i] - my) ** 2; });
  return sxx && syy ? sxy / Math.sqrt(sxx * syy) : null;
}

/** Spearman's rank correlation: Pearson's on the ranks (monotone, not only linear, relations). */
export const spearman = (xs, ys) => pearson(ranks(xs), ranks(ys));

/** The correlation ratio η²: the share of ys' variance between the groups (keys) rather than
 * within them; null when ys do not vary. */
export function etaSquared(keys, ys) {
  const m = mean(ys);
  const total = ys.reduce((a, y) => a + (y - m) ** 2, 0);
  if (!total) return null;
  const groups = new Map();
  keys.forEach((k, i) => groups.set(k, [...(groups.get(k) ?? []), ys[i]]));
  const between = [...groups.values()].reduce((a, g) => a + g.length * (mean(g) - m) ** 2, 0);
  return between / total;
}

/**
 * How much each hyperparameter explains of the metric, from 0 (nothing) to 1 (all of its order).
 * rows: [{hparams: Map(name -> value), value: metric}]. A numeric hyperparameter scores ρ², the
 * square of its Spearman rank correlation with the metric; any other scores η², the share of the
 * metric's rank variance between its values. Both look at ranks only, so one outlying trial does
 * not dominate, and both are 1 when the hyperparameter orders the trials by metric. A
 * hyperparameter with a single value (or a metric that never changes) scores null. Returns
 * [{name, score, rho, method, trials}], highest score first.
 */
export function hpImportance(rows) {
  const names = [...new Set(rows.flatMap((r) => [...r.hparams.keys()]))];
  return names.map((name) => {
    const have = rows.filter((r) => r.hparams.has(name) && typeof r.value === "number");
    const xs = have.map((r) => r.hparams.get(name));
    const ys = have.map((r) => r.value);
    const constant = new Set(xs.map((x) => JSON.stringify(x))).size < 2;
    if (xs.every((x) => typeof x === "number")) {
      const rho = constant ? null : spearman(xs, ys);
      return { name, score: rho === null ? null : rho * rho, rho, method: "ρ² (rank correlation)", trials: have.length };
    }
    const score = constant ? null : etaSquared(xs.map((x) => JSON.stringify(x)), ranks(ys));
    return { name, score, rho: null, method: "η² (variance between values)", trials: have.length };
  }).sort((a, b) => (b.score ?? -1) - (a.score ?? -1) || a.name.localeCompare(b.name));
}
