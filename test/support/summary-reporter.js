/**
 * Writes the run's totals to .jest-results.json so .ci/run can end with a
 * plain "N passed, N failed" line whatever jest printed before it.
 */
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

class SummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const summary = {
      passed: results.numPassedTests,
      failed: results.numFailedTests + results.numRuntimeErrorTestSuites,
      skipped: results.numPendingTests + results.numTodoTests,
      total: results.numTotalTests,
    };
    writeFileSync(join(this.rootDir, '.jest-results.json'), `${JSON.stringify(summary)}\n`);
  }
}

module.exports = SummaryReporter;
