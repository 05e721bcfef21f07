// TAP for the browser suites: one line per assertion, the diagnostics of a
// failure as comment lines, the plan at the end (tests/run.sh counts them).

let n = 0, failed = 0;

export function ok(name, cond, diag) {
  n++;
  if (cond) console.log(`ok ${n} - ${name}`);
  else {
    failed++;
    console.log(`not ok ${n} - ${name}`);
    if (diag !== undefined) for (const l of String(typeof diag === 'string' ? diag : JSON.stringify(diag)).split('\n')) console.log(`# ${l}`);
  }
  return cond;
}

export const note = (s) => console.log(`# ${s}`);

// Prints the plan; the exit status to end with (1 when anything failed).
export function plan() {
  console.log(`1..${n}`);
  return failed ? 1 : 0;
}
