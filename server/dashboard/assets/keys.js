// The keys pages: "select all" for the scope checkboxes, and the one-time
// view of a new key (copy button; never shown again on reload or back).
(() => {
  const all = document.getElementById('select-all');
  if (all) {
    const boxes = [...document.querySelectorAll('input[name="scopes"]')];
    const sync = () => {
      const checked = boxes.filter((b) => b.checked).length;
      all.checked = checked === boxes.length;
      all.indeterminate = checked > 0 && checked < boxes.length;
    };
    all.addEventListener('change', () => {
      for (const box of boxes) box.checked = all.checked;
      sync();
    });
    for (const box of boxes) box.addEventListener('change', sync);
    document.getElementById('select-all-row').hidden = false;
  }

  const shown = document.querySelector('[data-one-time-key]');
  if (!shown) return;
  // The page answers a POST. Its history entry becomes a plain GET of the
  // list, so a reload asks for the list instead of posting the form again.
  history.replaceState(null, '', '/account/keys');
  const field = document.getElementById('full-key');
  const copy = document.getElementById('copy-key');
  const status = document.getElementById('copy-status');
  copy.hidden = false;
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(field.value);
      status.textContent = 'Copied to the clipboard.';
    } catch {
      field.focus();
      field.select();
      status.textContent = 'Selected: press Ctrl+C (or Cmd+C) to copy.';
    }
  });
  // Leaving the page forgets the key, so the back-forward cache cannot bring it back.
  window.addEventListener('pagehide', () => {
    field.value = '';
    shown.remove();
  });
  window.addEventListener('pageshow', (event) => {
    if (event.persisted) location.reload();
  });
})();
