// The admin console's only script (docs/architecture.md "The admin console"): it sends the action
// forms to the console's admin API with the session's CSRF token after a confirmation that names
// the target, and loads the doctor report after the first paint. No inline script anywhere: the
// Content-Security-Policy allows scripts from this origin only.

const csrf = () => document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';

function flash(text, isError) {
  const box = document.getElementById('flash');
  if (!box) return;
  box.textContent = '';
  const p = document.createElement('p');
  p.className = isError ? 'error' : 'ok';
  if (isError) p.setAttribute('role', 'alert');
  p.textContent = text;
  box.append(p);
  box.focus?.();
}

/** Opens the confirmation dialog; resolves true on Confirm, false on Cancel or Escape. */
function confirmAction(text, opener) {
  const dialog = document.getElementById('confirm');
  if (!dialog || typeof dialog.showModal !== 'function') return Promise.resolve(window.confirm(text));
  document.getElementById('confirm-text').textContent = text;
  return new Promise((resolve) => {
    dialog.addEventListener(
      'close',
      () => {
        opener?.focus();
        resolve(dialog.returnValue === 'confirm');
      },
      { once: true },
    );
    dialog.returnValue = '';
    dialog.showModal();
    // The safe choice has the focus: Enter alone never confirms a change.
    dialog.querySelector('button[value="cancel"]')?.focus();
  });
}

async function send(form) {
  const body = {};
  for (const [name, value] of new FormData(form)) {
    if (typeof value === 'string' && value.trim() !== '') body[name] = value.trim();
  }
  const response = await fetch(form.dataset.api, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrf(), accept: 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status === 401) {
    window.location.assign(
      `/console/sign-in?next=${encodeURIComponent(window.location.pathname + window.location.search)}`,
    );
    return;
  }
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const problems = answer?.details?.problems;
    const more = Array.isArray(problems)
      ? ` ${problems.map((p) => `${p.file}: ${p.message}`).join('; ')}`
      : '';
    flash(
      `Refused (${response.status} ${answer.code ?? ''}): ${answer.message ?? response.statusText}.${more}`,
      true,
    );
    return;
  }
  sessionStorage.setItem('console-flash', form.dataset.done ?? 'Done.');
  window.location.reload();
}

document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.api) return;
  event.preventDefault();
  const opener = event.submitter ?? form.querySelector('button[type="submit"]');
  confirmAction(form.dataset.confirm ?? 'Go ahead?', opener).then((ok) => {
    if (!ok) return;
    opener?.setAttribute('aria-busy', 'true');
    send(form)
      .catch((err) => flash(`The request failed: ${err.message}`, true))
      .finally(() => opener?.removeAttribute('aria-busy'));
  });
});

document.addEventListener('DOMContentLoaded', () => {
  const done = sessionStorage.getItem('console-flash');
  if (done) {
    sessionStorage.removeItem('console-flash');
    flash(done, false);
  }
  for (const slot of document.querySelectorAll('[data-fragment]')) {
    slot.setAttribute('aria-busy', 'true');
    fetch(slot.dataset.fragment, { credentials: 'same-origin' })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`${r.status}`))))
      .then((text) => {
        const doc = new DOMParser().parseFromString(text, 'text/html');
        slot.replaceChildren(...doc.body.childNodes);
      })
      .catch((err) => {
        slot.textContent = `The doctor report could not be loaded (${err.message}).`;
      })
      .finally(() => slot.removeAttribute('aria-busy'));
  }
});
