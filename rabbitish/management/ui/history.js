// What the page has seen since it was opened: a few recent samples per key (a queue's depth,
// the rates the API reports at each refresh), which the sparklines and rate charts draw.
const KEPT = 40; // samples per series
const seen = new Map(); // key -> {name: [values]}

// Add one sample ({name: value}) under `key`; returns every series kept for it.
export function record(key, sample) {
  const series = seen.get(key) || {};
  for (const [name, value] of Object.entries(sample)) {
    const values = series[name] || (series[name] = []);
    values.push(Number(value) || 0);
    if (values.length > KEPT) values.shift();
  }
  seen.set(key, series);
  return series;
}

export function recorded(key, name) {
  return (seen.get(key) || {})[name] || [];
}

// The per-second rates of a message_stats document (its *_details.rate fields).
export function rates(stats, names) {
  const out = {};
  for (const name of names) out[name] = ((stats || {})[`${name}_details`] || {}).rate || 0;
  return out;
}
