/**
 * The paths the local ops view serves beside the API's route table
 * (config/layout.ts): the local stand-in for the operator's CloudWatch
 * dashboard. Its routes (./index.ts) and the tests that reach every route
 * read them here.
 */
export const OPS_PATHS = {
  metrics: '/v1/admin/metrics',
  jobEvents: '/dashboard/api/jobs/{id}/events',
  page: '/dashboard',
  script: '/dashboard/app.js',
  style: '/dashboard/app.css',
  chart: '/dashboard/chart.js',
} as const;
