// Load for the outage suites: each named call runs in a loop of its own, one request after the
// other, until stopped, and every answer is kept with when it was sent and when it came back (on
// performance.now()), so a test can ask what was answered before, during and after a fault.
export interface Sample<Name extends string> {
  what: Name;
  status: number;
  sentAt: number;
  answeredAt: number;
}

type Call = () => PromiseLike<{ status: number; body: unknown }>;

export interface Traffic<Name extends string> {
  samples: Sample<Name>[];
  /** The bodies of answers that came back 200, by call: what the service acknowledged. */
  acknowledged: Record<Name, unknown[]>;
  /** Samples of `what` sent at or after `from` and answered before `to`. */
  between(what: Name, from: number, to?: number): Sample<Name>[];
  /** Resolves once a sample matches (awaiting the event, not a sleep). */
  until(match: (sample: Sample<Name>) => boolean, timeoutMs?: number): Promise<Sample<Name>>;
  stop(): Promise<void>;
}

export function startTraffic<Name extends string>(calls: Record<Name, Call>): Traffic<Name> {
  const samples: Sample<Name>[] = [];
  const names = Object.keys(calls) as Name[];
  const acknowledged = Object.fromEntries(names.map((name) => [name, []])) as unknown as Record<Name, unknown[]>;
  const waiters = new Set<{ match: (s: Sample<Name>) => boolean; resolve: (s: Sample<Name>) => void }>();
  let running = true;

  const record = (sample: Sample<Name>) => {
    samples.push(sample);
    for (const waiter of waiters) {
      if (!waiter.match(sample)) continue;
      waiters.delete(waiter);
      waiter.resolve(sample);
    }
  };
  const loops = names.map(async (what) => {
    while (running) {
      const sentAt = performance.now();
      const res = await calls[what]();
      if (res.status === 200) acknowledged[what].push(res.body);
      record({ what, status: res.status, sentAt, answeredAt: performance.now() });
    }
  });

  return {
    samples,
    acknowledged,
    between: (what, from, to = Infinity) => samples.filter((s) => s.what === what && s.sentAt >= from && s.answeredAt < to),
    until(match, timeoutMs = 10_000) {
      const seen = samples.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const waiter = { match, resolve: (s: Sample<Name>) => (clearTimeout(timer), resolve(s)) };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`no such answer within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** The distinct statuses among `samples`, sorted. */
export function statusesOf(samples: readonly { status: number }[]): number[] {
  return [...new Set(samples.map((s) => s.status))].sort((a, b) => a - b);
}
