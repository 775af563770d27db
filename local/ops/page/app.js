// The local ops dashboard: polls the ops report every 2 s and draws it.
// Plain DOM and Chart.js; every value from the server is set as text, never as HTML.

const REFRESH_MS = 2000;
const KEY_ITEM = 'longhaul.adminKey';

const byId = (id) => document.getElementById(id);

let selectedJobId = null;
let timer = null;
let chart = null;

/** The admin key: from `?key=` once (then dropped from the address bar and history), else this tab's storage. */
function adminKey() {
  const params = new URLSearchParams(location.search);
  const fromQuery = params.get('key');
  if (fromQuery) {
    sessionStorage.setItem(KEY_ITEM, fromQuery);
    params.delete('key');
    const query = params.toString();
    history.replaceState(null, '', `${location.pathname}${query ? `?${query}` : ''}${location.hash}`);
  }
  return sessionStorage.getItem(KEY_ITEM);
}

class RefusedKeyError extends Error {}

async function fetchJson(path) {
  const response = await fetch(path, { headers: { 'X-API-Key': adminKey() ?? '' }, cache: 'no-store' });
  if (response.status === 401 || response.status === 403) {
    throw new RefusedKeyError(`The key was refused (${response.status}); enter the admin key.`);
  }
  if (!response.ok) throw new Error(`${path} answered ${response.status}`);
  return response.json();
}

/** Builds an element; children are nodes or text (always set as text). */
function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'className') element.className = value;
    else if (name === 'onClick') element.addEventListener('click', value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

const text = (id, value) => {
  byId(id).textContent = String(value);
};

const clock = (iso) =>
  new Date(iso).toLocaleTimeString(undefined, {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hour12: false,
  });
const preciseClock = (iso) => {
  const at = new Date(iso);
  return `${clock(iso)}.${String(at.getMilliseconds()).padStart(3, '0')}`;
};
const duration = (ms) => {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
};
const errorText = (error) => (error ? `${error.code}: ${error.message}` : '');

function statusBadge(status) {
  return el('span', { className: `status status-${status.replace('_', '-')}` }, status);
}

function showProblem(message) {
  const problem = byId('problem');
  problem.textContent = message ?? '';
  problem.hidden = !message;
}

function askForKey(message) {
  sessionStorage.removeItem(KEY_ITEM);
  clearTimeout(timer);
  byId('dashboard').hidden = true;
  byId('forget-key').hidden = true;
  byId('key-panel').hidden = false;
  showProblem(message);
  byId('key-input').focus();
}

function drawChart(rates) {
  const labels = rates.map((period) => clock(period.at));
  const series = [
    { key: 'submitted', label: 'Submitted', color: '#1d4ed8', dash: [] },
    { key: 'succeeded', label: 'Succeeded', color: '#15803d', dash: [8, 4] },
    { key: 'failed', label: 'Failed', color: '#b91c1c', dash: [2, 3] },
  ];
  const totals = Object.fromEntries(
    series.map(({ key }) => [key, rates.reduce((sum, period) => sum + period[key], 0)]),
  );
  const summary = `Last 10 minutes: ${totals.submitted} submitted, ${totals.succeeded} succeeded, ${totals.failed} failed.`;
  text('rates-summary', summary);
  byId('rates-chart').setAttribute('aria-label', `Throughput chart. ${summary}`);
  if (typeof Chart === 'undefined') return;
  if (!chart) {
    chart = new Chart(byId('rates-chart'), {
      type: 'line',
      data: {
        labels,
        datasets: series.map(({ key, label, color, dash }) => ({
          label,
          data: rates.map((period) => period[key]),
          borderColor: color,
          backgroundColor: color,
          borderDash: dash,
          borderWidth: 2,
          pointRadius: 0,
          tension: 0,
        })),
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { ticks: { maxTicksLimit: 10 } },
          y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'jobs / 10 s' } },
        },
        plugins: { legend: { position: 'bottom', labels: { usePointStyle: true, pointStyle: 'line' } } },
      },
    });
    return;
  }
  chart.data.labels = labels;
  series.forEach(({ key }, index) => {
    chart.data.datasets[index].data = rates.map((period) => period[key]);
  });
  chart.update('none');
}

function rows(parentId, items, row) {
  byId(parentId).replaceChildren(...items.map(row));
}

function jobButton(id) {
  return el(
    'button',
    {
      type: 'button',
      className: 'link',
      'data-job-id': id,
      'aria-pressed': id === selectedJobId ? 'true' : 'false',
      onClick: () => selectJob(id),
    },
    id,
  );
}

function drawJobs(report) {
  // A refresh replaces the rows; whoever was on a job's button stays on it.
  const focused = document.activeElement?.dataset?.jobId;
  const jobs = report.recentJobs;
  byId('jobs-empty').hidden = jobs.length > 0;
  byId('jobs-table').hidden = jobs.length === 0;
  rows('job-rows', jobs, (job) =>
    el(
      'tr',
      {},
      el('th', { scope: 'row' }, jobButton(job.id)),
      el('td', {}, job.type),
      el('td', {}, statusBadge(job.status)),
      el('td', {}, `${job.progress}%`),
      el('td', {}, clock(job.statusAt)),
      el('td', { className: 'wrap' }, errorText(job.error)),
    ),
  );
  const review = report.needsReview;
  byId('review-empty').hidden = review.length > 0;
  byId('review-table').hidden = review.length === 0;
  rows('review-rows', review, (job) =>
    el(
      'tr',
      {},
      el('th', { scope: 'row' }, jobButton(job.id)),
      el('td', {}, job.type),
      el('td', {}, clock(job.statusAt)),
      el('td', { className: 'wrap' }, errorText(job.error)),
    ),
  );
  if (focused) document.querySelector(`button[data-job-id="${CSS.escape(focused)}"]`)?.focus();
}

/** A paused provider holds no slot, as an idle one does: its state tells them apart. */
function providerState(provider) {
  if (provider.state !== 'paused') return provider.state;
  const reason = provider.reason ? `: ${provider.reason}` : '';
  return `paused until ${clock(provider.pausedUntil)}${reason}`;
}

function draw(report) {
  const { queue } = report;
  rows('in-flight', report.providers, (provider) =>
    el(
      'li',
      { 'data-provider': provider.name },
      el('span', { className: 'name' }, provider.name),
      el('span', { className: 'count' }, `${provider.inFlight} / ${provider.limit}`),
      el('span', { className: `state ${provider.state}` }, providerState(provider)),
      el('meter', {
        min: 0,
        max: provider.limit,
        value: provider.inFlight,
        'aria-label': `${provider.name}: slots in use`,
      }),
    ),
  );
  text('queue-depth', queue.depth);
  text(
    'queue-detail',
    `${queue.visible} waiting, ${queue.notVisible} being dispatched, ${queue.delayed} delayed`,
  );
  text('dlq-depth', report.deadLetterQueue.depth);
  text('active-queued', report.activeByStatus.queued);
  text('active-running', report.activeByStatus.running);
  text('active-needs-review', report.activeByStatus.needs_review);

  text(
    'since',
    `Counted from the metrics the handlers emitted since ${new Date(report.since).toLocaleString(undefined, { hour12: false })}.`,
  );
  text('total-submitted', report.jobs.submitted);
  text('total-started', report.jobs.started);
  text('total-succeeded', report.jobs.succeeded);
  text('total-failed', report.jobs.failed);
  text('total-canceled', report.jobs.canceled);
  text('total-needs-review', report.jobs.needsReview);

  drawChart(report.rates);

  const { latency } = report;
  text('latency-caption', `Over the last ${latency.windowSeconds / 60} minutes.`);
  const latencyRows = [
    ['Queue wait', latency.queueWait],
    ['Job duration', latency.jobDuration],
    ['Provider round trip', latency.providerLatency],
  ];
  rows('latency-rows', latencyRows, ([label, p]) =>
    el(
      'tr',
      {},
      el('th', { scope: 'row' }, label),
      el('td', {}, duration(p.p50)),
      el('td', {}, duration(p.p90)),
      el('td', {}, duration(p.p99)),
      el('td', {}, p.samples),
    ),
  );
  const counts = (record) => Object.entries(record).sort(([a], [b]) => a.localeCompare(b));
  rows('provider-rows', report.providers, (provider) =>
    el(
      'tr',
      {},
      el('th', { scope: 'row' }, provider.name),
      el('td', { className: 'wrap' }, providerState(provider)),
      el('td', {}, provider.inFlight),
      el('td', {}, provider.limit),
      el('td', {}, provider.queued),
    ),
  );
  rows('tenant-rows', report.tenants, (tenant) =>
    el(
      'tr',
      {},
      el('th', { scope: 'row' }, tenant.tenant),
      el('td', {}, tenant.queued),
      el('td', {}, tenant.scheduled),
      el('td', {}, tenant.inFlight),
    ),
  );
  rows('job-type-rows', report.jobTypes, (jobType) =>
    el(
      'tr',
      {},
      el('th', { scope: 'row' }, jobType.type),
      el('td', {}, jobType.provider),
      el('td', {}, jobType.submitted),
      el('td', {}, jobType.succeeded),
      el('td', {}, jobType.failed),
    ),
  );
  rows('retry-rows', counts(report.stepRetries), ([step, n]) =>
    el('tr', {}, el('th', { scope: 'row' }, step), el('td', {}, n)),
  );
  rows('fix-rows', counts(report.reconcilerFixes), ([kind, n]) =>
    el('tr', {}, el('th', { scope: 'row' }, kind), el('td', {}, n)),
  );

  drawJobs(report);
  text('updated', `Updated ${clock(report.generatedAt)}`);
}

async function drawTimeline() {
  const panel = byId('timeline-panel');
  if (!selectedJobId) {
    panel.hidden = true;
    return;
  }
  const { job, items } = await fetchJson(`/dashboard/api/jobs/${encodeURIComponent(selectedJobId)}/events`);
  panel.hidden = false;
  const jobLine = byId('timeline-job');
  jobLine.replaceChildren(
    `${job.id} · ${job.type} · `,
    statusBadge(job.status),
    job.error ? ` · ${errorText(job.error)}` : '',
  );
  rows('timeline-rows', items, (event) =>
    el(
      'tr',
      {},
      el('td', {}, preciseClock(event.at)),
      el('td', {}, event.type),
      el('td', {}, event.step ?? ''),
      el('td', {}, event.attempt ?? ''),
      el('td', { className: 'wrap' }, event.detail ?? ''),
    ),
  );
}

function selectJob(id) {
  selectedJobId = id;
  for (const button of document.querySelectorAll('button[data-job-id]')) {
    button.setAttribute('aria-pressed', button.dataset.jobId === id ? 'true' : 'false');
  }
  drawTimeline()
    .then(() => byId('timeline-heading').scrollIntoView({ block: 'nearest' }))
    .catch(handleFailure);
}

function handleFailure(error) {
  if (error instanceof RefusedKeyError) askForKey(error.message);
  else showProblem(`Could not refresh: ${error.message}. Retrying.`);
}

async function refresh() {
  clearTimeout(timer);
  try {
    const report = await fetchJson('/v1/admin/metrics');
    byId('key-panel').hidden = true;
    byId('dashboard').hidden = false;
    byId('forget-key').hidden = false;
    showProblem(null);
    draw(report);
    await drawTimeline();
  } catch (error) {
    handleFailure(error);
    if (error instanceof RefusedKeyError) return;
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

byId('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = byId('key-input');
  sessionStorage.setItem(KEY_ITEM, input.value.trim());
  input.value = '';
  refresh();
});

byId('forget-key').addEventListener('click', () => askForKey(null));

if (adminKey()) refresh();
else askForKey(null);
