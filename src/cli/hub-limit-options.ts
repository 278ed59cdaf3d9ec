/**
 * The limits of a hub as options, shared by `resourcesync hub` and `serve`'s embedded hub: `--max-body`,
 * `--max-topic-queue`, `--max-queue`, `--max-subscriber-queue`, `--max-verifications`, `--give-up-after` and
 * `--give-up-attempts`, with their help and their parsing.
 */
import { HUB_DEFAULT_GIVE_UP, HUB_DEFAULT_LIMITS, type GiveUp, type HubLimits } from '../notify/hub.js';

/** Limit options: flag → the field of HubLimits it sets. */
const LIMIT_FLAGS = {
  'max-body': 'bodyBytes',
  'max-topic-queue': 'topicBytes',
  'max-queue': 'totalBytes',
  'max-subscriber-queue': 'subscriberBytes',
  'max-verifications': 'verifications',
} as const satisfies Record<string, keyof HubLimits>;

const NAMES = [...(Object.keys(LIMIT_FLAGS) as Array<keyof typeof LIMIT_FLAGS>), 'give-up-after', 'give-up-attempts'] as const;

/** The values of the options, as `parseArgs` gives them. */
type LimitValues = { readonly [K in (typeof NAMES)[number]]?: string | undefined };

/** The `parseArgs` options of the hub's limits. */
export const HUB_LIMIT_ARGS = Object.fromEntries(NAMES.map((k) => [k, { type: 'string' as const }])) as Record<
  (typeof NAMES)[number],
  { type: 'string' }
>;

/** The help rows of the hub's limits, their descriptions starting at `column`. */
export function hubLimitHelp(column: number): string {
  const rows: Array<[string, string[]]> = [
    ['--max-body BYTES', [`largest published body (default ${HUB_DEFAULT_LIMITS.bodyBytes}): 413 above it`]],
    ['--max-topic-queue BYTES', [`most bytes queued for one topic (default ${HUB_DEFAULT_LIMITS.topicBytes}): 429`]],
    ['--max-queue BYTES', [`most bytes queued in all (default ${HUB_DEFAULT_LIMITS.totalBytes}): 503`]],
    [
      '--max-subscriber-queue BYTES',
      [`most bytes queued for one subscriber (default ${HUB_DEFAULT_LIMITS.subscriberBytes});`, 'a subscriber whose queue is full is given up'],
    ],
    ['--max-verifications N', [`verifications of intent in flight (default ${HUB_DEFAULT_LIMITS.verifications}): 503`]],
    [
      '--give-up-after SECONDS',
      [
        'give a callback up once its deliveries failed for this long (default',
        `${HUB_DEFAULT_GIVE_UP.afterMs / 1000}) and at least --give-up-attempts times in a row;`,
        'its queue is dropped',
      ],
    ],
    ['--give-up-attempts N', [`failed deliveries in a row before a callback is given up (default ${HUB_DEFAULT_GIVE_UP.attempts})`]],
  ];
  return rows
    .map(([flag, [first, ...more]]) => {
      const head = `  ${flag}`;
      const lead = head.length + 2 <= column ? head.padEnd(column) : `${head}  `;
      return [`${lead}${first}`, ...more.map((line) => `${' '.repeat(column)}${line}`)].map((l) => `${l}\n`).join('');
    })
    .join('');
}

/** The limits and give-up rule that the options set (only what was given). */
export interface HubLimitOptions {
  limits: Partial<HubLimits>;
  giveUp: Partial<GiveUp>;
}

/** Reads the hub's limit options from parsed `values`, or returns the usage error of the first that is not a positive integer. */
export function hubLimitOptions(values: LimitValues): HubLimitOptions | string {
  const numbers = new Map<string, number>();
  for (const name of NAMES) {
    const v = values[name];
    if (v === undefined) continue;
    const n = Number(v);
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1) return `--${name} '${v}' is not a positive integer.`;
    numbers.set(name, n);
  }
  const limits: Partial<HubLimits> = {};
  for (const [flag, field] of Object.entries(LIMIT_FLAGS)) {
    const n = numbers.get(flag);
    if (n !== undefined) limits[field] = n;
  }
  const giveUpAfter = numbers.get('give-up-after');
  const giveUpAttempts = numbers.get('give-up-attempts');
  return {
    limits,
    giveUp: {
      ...(giveUpAfter === undefined ? {} : { afterMs: giveUpAfter * 1000 }),
      ...(giveUpAttempts === undefined ? {} : { attempts: giveUpAttempts }),
    },
  };
}

/** Whether any of the hub's limit options was given (the first one's flag), e.g. to refuse it where no hub runs. */
export function hubLimitGiven(values: LimitValues): string | undefined {
  const name = NAMES.find((n) => values[n] !== undefined);
  return name === undefined ? undefined : `--${name}`;
}
