import {
  defaultSettings,
  loadSettings,
  publishRenditionsKbps,
  queueVisibilityTimeoutSeconds,
  SettingsError,
  settingsEnvironment,
} from '../../config/settings';

describe('loadSettings', () => {
  it('uses the contract defaults when nothing is set', () => {
    expect(loadSettings({})).toEqual(defaultSettings);
    expect(defaultSettings).toMatchObject({
      maxInFlight: 5,
      reconcileIntervalMs: 10_000,
      queuedGraceMs: 30_000,
      jobTimeoutMs: 600_000,
      jobRetentionDays: 30,
      maxReceiveCount: 5,
      reconcileSchedule: 'rate(1 minute)',
    });
  });

  it('applies valid overrides with their types', () => {
    const settings = loadSettings({
      MAX_IN_FLIGHT: '12',
      ALLOW_PRIVATE_WEBHOOKS: 'true',
      JOB_RETENTION_DAYS: '7',
    });
    expect(settings.maxInFlight).toBe(12);
    expect(settings.allowPrivateWebhooks).toBe(true);
    expect(settings.jobRetentionDays).toBe(7);
  });

  it('lists every bad value, naming the variable', () => {
    let error: unknown;
    try {
      loadSettings({ MAX_IN_FLIGHT: 'many', LOG_RETENTION_DAYS: '8', JOB_RETENTION_DAYS: '0' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SettingsError);
    const problems = (error as SettingsError).problems;
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^MAX_IN_FLIGHT="many": /);
    expect(problems[1]).toMatch(/^JOB_RETENTION_DAYS="0": .*1/);
    expect(problems[2]).toMatch(/^LOG_RETENTION_DAYS="8": must be one of 1, 3, 5/);
  });

  it.each(['rate(1 minutes)', 'rate(0 minutes)', 'rate(2 minute)', 'cron(* * * * ? *)'])(
    'refuses the schedule %s',
    (schedule) => {
      expect(() => loadSettings({ RECONCILE_SCHEDULE: schedule })).toThrow(/RECONCILE_SCHEDULE/);
    },
  );

  it('refuses a burst below the steady rate', () => {
    expect(() => loadSettings({ API_RATE_LIMIT: '50', API_BURST_LIMIT: '10' })).toThrow(
      /API_BURST_LIMIT \(10\) must be at least API_RATE_LIMIT \(50\)/,
    );
  });

  it('refuses a heartbeat that is not shorter than the job timeout', () => {
    expect(() => loadSettings({ JOB_TIMEOUT_MS: '60000', AWAIT_HEARTBEAT_SECONDS: '60' })).toThrow(
      /AWAIT_HEARTBEAT_SECONDS \(60\) must be shorter than JOB_TIMEOUT_MS \(60000 ms\)/,
    );
  });

  it.each(['UPLOAD_URL_TTL_SECONDS', 'OUTPUT_URL_TTL_SECONDS'])(
    'refuses a %s longer than a role session can live (12 hours)',
    (name) => {
      expect(loadSettings({ [name]: '43200' })).toBeDefined();
      expect(() => loadSettings({ [name]: '43201' })).toThrow(new RegExp(`${name}="43201": .*43200`));
    },
  );

  it('gives audio.publish its media defaults: 600 s chunks, 64 and 128 kbit/s renditions, 6 s segments', () => {
    expect(defaultSettings).toMatchObject({
      transcribeChunkSeconds: 600,
      publishSegmentSeconds: 6,
      computeTimeoutSeconds: 900,
    });
    expect(publishRenditionsKbps(defaultSettings)).toEqual([64, 128]);
    expect(publishRenditionsKbps(loadSettings({ PUBLISH_RENDITIONS_KBPS: '192,48' }))).toEqual([48, 192]);
  });

  it.each(['64,64', '8', '64;128', '64,400', ''])('refuses the renditions %j unless empty', (value) => {
    if (value === '') {
      expect(loadSettings({ PUBLISH_RENDITIONS_KBPS: value }).publishRenditionsKbps).toBe('64,128');
    } else {
      expect(() => loadSettings({ PUBLISH_RENDITIONS_KBPS: value })).toThrow(
        /^[\s\S]*PUBLISH_RENDITIONS_KBPS=/,
      );
    }
  });

  it('refuses a Lambda threshold above the longest recording accepted', () => {
    expect(() =>
      loadSettings({ PUBLISH_MAX_DURATION_SECONDS: '3600', COMPUTE_LAMBDA_MAX_AUDIO_SECONDS: '3601' }),
    ).toThrow(
      /COMPUTE_LAMBDA_MAX_AUDIO_SECONDS \(3601\) must not exceed PUBLISH_MAX_DURATION_SECONDS \(3600\)/,
    );
    expect(() => loadSettings({ COMPUTE_TIMEOUT_SECONDS: '901' })).toThrow(/COMPUTE_TIMEOUT_SECONDS="901"/);
  });

  it('embeds with Titan Text Embeddings V2 at 1,024 normalized dimensions unless told otherwise', () => {
    expect(loadSettings({})).toMatchObject({
      embeddingModel: 'titan-text-v2',
      embeddingDimensions: 1024,
      embeddingNormalize: true,
      embeddingPassagesPerJob: 32,
      vectorDistanceMetric: 'cosine',
    });
    expect(loadSettings({ EMBEDDING_MODEL: 'titan-text-v2', EMBEDDING_DIMENSIONS: '256' })).toMatchObject({
      embeddingDimensions: 256,
    });
  });

  it('refuses dimensions the chosen model does not answer with, and a model it does not know', () => {
    expect(() =>
      loadSettings({ EMBEDDING_MODEL: 'cohere-multilingual-v3', EMBEDDING_DIMENSIONS: '512' }),
    ).toThrow(
      /EMBEDDING_DIMENSIONS \(512\) must be one that Cohere Embed Multilingual v3 answers with: 1024/,
    );
    expect(() => loadSettings({ EMBEDDING_DIMENSIONS: '768' })).toThrow(
      /Amazon Titan Text Embeddings V2 answers with: 1024, 512, 256/,
    );
    expect(() => loadSettings({ EMBEDDING_MODEL: 'ada-002' })).toThrow(/EMBEDDING_MODEL="ada-002"/);
    expect(() => loadSettings({ EMBEDDING_PASSAGES_PER_JOB: '501' })).toThrow(
      /EMBEDDING_PASSAGES_PER_JOB="501"/,
    );
  });

  it('refuses a Fargate memory its CPU size does not allow', () => {
    expect(loadSettings({ COMPUTE_FARGATE_CPU: '1024', COMPUTE_FARGATE_MEMORY_MB: '8192' })).toMatchObject({
      computeFargateCpu: 1024,
      computeFargateMemoryMb: 8192,
    });
    expect(() => loadSettings({ COMPUTE_FARGATE_CPU: '1024', COMPUTE_FARGATE_MEMORY_MB: '8193' })).toThrow(
      /COMPUTE_FARGATE_MEMORY_MB \(8193\) must be from 2048 to 8192 with COMPUTE_FARGATE_CPU 1024/,
    );
    expect(() => loadSettings({ COMPUTE_FARGATE_CPU: '3000' })).toThrow(
      /COMPUTE_FARGATE_CPU="3000": must be one of 256/,
    );
  });

  it('round-trips through the environment handed to functions', () => {
    const settings = loadSettings({ MAX_IN_FLIGHT: '3', RECONCILE_SCHEDULE: 'rate(5 minutes)' });
    expect(loadSettings(settingsEnvironment(settings))).toEqual(settings);
  });

  it('sets the queue visibility timeout to six times the consumer timeout', () => {
    expect(queueVisibilityTimeoutSeconds(loadSettings({ DISPATCH_TIMEOUT_SECONDS: '20' }))).toBe(120);
  });

  it('gives each provider its own limit, falling back to MAX_IN_FLIGHT', () => {
    const settings = loadSettings({
      MAX_IN_FLIGHT: '4',
      MAX_IN_FLIGHT_REPLICATE: '2',
      MAX_IN_FLIGHT_DEEPGRAM: '3',
    });
    expect(settings.providers.replicate.maxInFlight).toBe(2);
    expect(settings.providers.deepgram.maxInFlight).toBe(3);
    expect(settings.providers['longhaul-http'].maxInFlight).toBe(4);
  });

  it('gives each provider the rate its catalog documents, which RATE_PER_MINUTE_<PROVIDER> and RATE_BURST_<PROVIDER> override', () => {
    expect(defaultSettings.providers.replicate.rate).toEqual({ perMinute: 600, burst: 10 });
    expect(defaultSettings.providers.deepgram.rate).toBeUndefined();
    expect(defaultSettings.providers.bedrock.rate).toBeUndefined();
    expect(defaultSettings.providers['longhaul-http'].rate).toBeUndefined();
    const settings = loadSettings({
      RATE_PER_MINUTE_REPLICATE: '0',
      RATE_PER_MINUTE_LONGHAUL_HTTP: '120',
      RATE_BURST_LONGHAUL_HTTP: '4',
    });
    expect(settings.providers.replicate.rate).toBeUndefined();
    expect(settings.providers['longhaul-http'].rate).toEqual({ perMinute: 120, burst: 4 });
    expect(loadSettings(settingsEnvironment(settings)).providers).toEqual(settings.providers);
    expect(() => loadSettings({ RATE_BURST_REPLICATE: '0' })).toThrow(/RATE_BURST_REPLICATE="0"/);
  });

  it('says which providers deduplicate: the generic one as PROVIDER_IDEMPOTENT says, Replicate and Deepgram never', () => {
    const settings = loadSettings({ PROVIDER_IDEMPOTENT: '1' });
    expect(settings.providers['longhaul-http'].deduplicates).toBe(true);
    expect(settings.providers.replicate.deduplicates).toBe(false);
    expect(settings.providers.deepgram.deduplicates).toBe(false);
    expect(loadSettings({ PROVIDER_IDEMPOTENT: '0' }).providers['longhaul-http'].deduplicates).toBe(false);
  });

  it('runs each job type on its own provider unless PROVIDER_<JOB_TYPE> names another it supports', () => {
    expect(defaultSettings.jobTypeProviders).toEqual({
      'image.generate': 'replicate',
      'audio.transcribe': 'deepgram',
      'audio.publish': 'deepgram',
    });
    expect(
      loadSettings({ PROVIDER_IMAGE_GENERATE: 'longhaul-http' }).jobTypeProviders['image.generate'],
    ).toBe('longhaul-http');
  });

  it('stops on a misconfigured provider or job type, naming it', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadSettings(env);
      } catch (error) {
        return (error as SettingsError).problems;
      }
      return [];
    };
    expect(problems({ PROVIDER_IMAGE_GENERATE: 'fal' })).toEqual([
      'PROVIDER_IMAGE_GENERATE="fal": no provider is named so (one of longhaul-http, replicate, deepgram, bedrock)',
    ]);
    expect(problems({ PROVIDER_AUDIO_TRANSCRIBE: 'replicate' })).toEqual([
      'PROVIDER_AUDIO_TRANSCRIBE="replicate": audio.transcribe cannot run on replicate (it runs on deepgram, longhaul-http)',
    ]);
    expect(problems({ MAX_IN_FLIGHT_DEEPGRAM: '0' })).toEqual([
      expect.stringMatching(/^MAX_IN_FLIGHT_DEEPGRAM="0": .* \(jobs at Deepgram at once\)$/),
    ]);
    expect(problems({ PROVIDER_BASE_URL_REPLICATE: 'ftp://x' })).toEqual([
      expect.stringMatching(/^PROVIDER_BASE_URL_REPLICATE="ftp:\/\/x": must be an http or https URL/),
    ]);
  });

  it('round-trips the per-provider settings through the environment handed to functions', () => {
    const settings = loadSettings({
      MAX_IN_FLIGHT_REPLICATE: '7',
      PROVIDER_AUDIO_TRANSCRIBE: 'longhaul-http',
      PROVIDER_BASE_URL_LONGHAUL_HTTP: 'https://media.example.com',
    });
    expect(loadSettings(settingsEnvironment(settings))).toEqual(settings);
  });
});
