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

// Query and read in one step inside the page. page.$eval and page.$$eval
// query first and run their function in a second round trip; a poll's redraw
// between the two hands it detached nodes, whose computed style is "" (a
// measured link read as opacity "", a fresh-clone make test). One evaluate
// runs between two redraws, so every node it reads is the drawn one.
export function readNow(page, sel, fn) {
  return page.evaluate(`(${fn})([...document.querySelectorAll(${JSON.stringify(sel)})])`);
}

// The same for one node; throws as $eval does when there is none.
export function readOneNow(page, sel, fn) {
  return page.evaluate(`(() => { const n = document.querySelector(${JSON.stringify(sel)});
    if (!n) throw new Error('no node matches ' + ${JSON.stringify(sel)}); return (${fn})(n); })()`);
}
