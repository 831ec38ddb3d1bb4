// Number formats shared by the summary table and the charts, in the
// report's English style (50,000; 39.6%; 8.42×; 511 s).

const fmts = new Map();

// num formats x with at most digits decimals.
export function num(x, digits = 2) {
  if (!fmts.has(digits)) fmts.set(digits, new Intl.NumberFormat("en-US", { maximumFractionDigits: digits }));
  return fmts.get(digits).format(x);
}

// count formats a count, or a mean of counts over runs.
export function count(x) {
  return num(x, Math.abs(x) >= 100 ? 0 : 2);
}

export function percent(ratio) {
  return num(ratio * 100, 2) + "%";
}

// times formats a ratio: 8.42×, and 0.0016× for small ones.
export function times(x) {
  return (x !== 0 && Math.abs(x) < 0.01 ? String(Number(x.toPrecision(2))) : num(x, 2)) + "×";
}

// seconds formats a duration in seconds: milliseconds below one second.
// The number and its unit are joined by a no-break space: a table cell
// that wraps keeps them together.
export function seconds(x) {
  if (x !== 0 && Math.abs(x) < 1) return num(x * 1000, Math.abs(x) < 0.001 ? 3 : 1) + "\u00a0ms";
  return num(x, 2) + "\u00a0s";
}

// compact formats an axis tick: 500, 1.5k, 50k, 2M.
export function compact(x) {
  const a = Math.abs(x);
  if (a >= 1e6) return num(x / 1e6, 1) + "M";
  if (a >= 1e4) return num(x / 1e3, 0) + "k";
  if (a >= 1e3) return num(x / 1e3, 1) + "k";
  return num(x, 3);
}
