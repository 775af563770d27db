import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { loadSettings, SettingsError } from '../config/settings';
import { LonghaulStack } from '../lib/longhaul-stack';

function settingsOrExit() {
  try {
    return loadSettings(process.env);
  } catch (error) {
    if (error instanceof SettingsError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}

const settings = settingsOrExit();
const app = new App();
new LonghaulStack(app, 'Longhaul', {
  settings,
  alarmEmail: process.env.ALARM_EMAIL || undefined,
});
// Runs on every synth; any AwsSolutions finding not acknowledged in code fails it.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
