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

/** A form's fields as a JSON body: empty ones left out, `a.b` names nested, date inputs as midnight UTC. */
function bodyOf(form) {
  const body = {};
  for (const element of form.elements) {
    if (!element.name || typeof element.value !== 'string' || element.value.trim() === '') continue;
    const value = 'date' in element.dataset ? `${element.value}T00:00:00Z` : element.value.trim();
    const path = element.name.split('.');
    let at = body;
    for (const key of path.slice(0, -1)) {
      at[key] ??= {};
      at = at[key];
    }
    at[path[path.length - 1]] = value;
  }
  return body;
}

/** POSTs to the console's admin API: the answer, or undefined once it has shown why it failed. */
async function post(url, body) {
  const response = await fetch(url, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrf(), accept: 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status === 401) {
    window.location.assign(
      `/console/sign-in?next=${encodeURIComponent(window.location.pathname + window.location.search)}`,
    );
    return undefined;
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
    return undefined;
  }
  return answer;
}

async function send(form) {
  if ((await post(form.dataset.api, bodyOf(form))) === undefined) return;
  sessionStorage.setItem('console-flash', form.dataset.done ?? 'Done.');
  window.location.reload();
}

/**
 * The Bulk page: count (a dry run), confirm by typing the count, start, then follow the job. Any
 * change to the selection asks for a new count.
 */
function bulkPage(form) {
  const confirmBox = document.getElementById('b-confirm');
  const typed = document.getElementById('b-typed');
  const start = document.getElementById('b-start');
  let counted;
  const reset = () => {
    counted = undefined;
    confirmBox.hidden = true;
    start.disabled = true;
    typed.value = '';
  };
  form.addEventListener('input', (event) => {
    if (event.target === typed)
      start.disabled = counted === undefined || typed.value.trim() !== String(counted);
    else reset();
  });
  document.getElementById('b-count').addEventListener('click', async () => {
    if (!form.reportValidity()) return;
    const answer = await post(form.dataset.api, { ...bodyOf(form), dryRun: true });
    if (answer === undefined) return;
    counted = answer.count;
    document.getElementById('b-matched').textContent =
      `${counted} credential(s) match. Type ${counted} below to ${form.elements.change.value} them.`;
    confirmBox.hidden = false;
    typed.focus();
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (counted === undefined || typed.value.trim() !== String(counted)) return;
    start.disabled = true;
    // The count the operator typed: if the selection has changed since, the server answers 409
    // and changes nothing (docs/operations.md "Bulk status changes"); a new count is needed.
    const answer = await post(form.dataset.api, {
      ...bodyOf(form),
      expectedCount: Number(typed.value.trim()),
    });
    if (answer === undefined) reset();
    else follow(answer.jobId);
  });
}

/** Polls the job until it ends, showing its progress. */
async function follow(jobId) {
  const section = document.getElementById('b-job');
  const bar = document.getElementById('b-progress');
  const state = document.getElementById('b-state');
  section.hidden = false;
  for (;;) {
    const response = await fetch(`/console/api/admin/status-changes/${encodeURIComponent(jobId)}`, {
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
    });
    const job = await response.json().catch(() => ({}));
    if (!response.ok) {
      state.textContent = `The job could not be read (${response.status}).`;
      return;
    }
    bar.max = Math.max(1, job.total);
    bar.value = job.done + job.failed;
    state.textContent = `Job ${job.jobId}: ${job.state}, ${job.done} of ${job.total} changed${job.failed ? `, ${job.failed} failed` : ''}.${job.error ? ` ${job.error}` : ''}`;
    if (job.state !== 'running') return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.api || 'bulk' in form.dataset) return;
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
  const bulk = document.querySelector('form[data-bulk]');
  if (bulk) bulkPage(bulk);
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
