// The dashboard redraws on every poll, replacing the nodes a test found a
// moment before. Playwright then says "not attached to the DOM", "Element is
// not visible" (a click on a replaced line, a fresh-clone make test) or "Node
// is either not visible or not an HTMLElement"; a locator finds the new node
// on the next try. Only those errors are retried, at most `tries` times.
const REDRAWN = /not attached to the DOM|Element is not visible|not visible or not an HTMLElement/;

export async function redrawn(fn, tries = 5) {
  for (let i = 0; ; i++) {
    try { return await fn(); } catch (e) {
      if (i >= tries - 1 || !REDRAWN.test(e.message)) throw e;
    }
  }
}
