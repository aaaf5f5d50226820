/**
 * Real-shaped text samples for the token-estimator error test. Reference token counts for each sample
 * were computed offline with the cl100k_base and o200k_base encodings (gpt-tokenizer 4.0.0) and are
 * hard-coded in the test, so the test needs no tokenizer at run time.
 */
export const tokenSamples: Record<string, string> = {
  prose: `When we moved the team to a four-day week last spring, the biggest surprise was not productivity but how much calmer the planning meetings became. People stopped over-committing, because everyone knew the week was short and the backlog would still be there on Monday. We kept a simple rule: anything that could not be finished by Thursday afternoon was split into smaller pieces or pushed to the next cycle. After three months the number of carried-over tickets dropped by almost half, and the on-call rotation, which used to be the most dreaded part of the job, became something people volunteered for. Not everything worked, of course. Customer support still needed coverage on Fridays, so we staggered days off within that group, and the first attempt at a shared calendar was a mess of overlapping colours and forgotten updates. If you are thinking about trying this yourself, start with one team, measure what you care about before you begin, and be honest about the trade-offs with the people who depend on you.`,
  chat: `hey! quick question - can you remind me what time the dentist appointment is tomorrow? also, did Sarah ever reply about the birthday dinner on the 14th? I think she said something about moving it to Saturday but I can't find the message. thanks :)
Sure. Your dentist appointment is tomorrow at 9:30 with Dr. Okafor at the Elm Street clinic. Sarah replied on Tuesday: she suggested Saturday the 15th at 7 pm instead of Friday, at the Thai place near her office. Want me to confirm Saturday with her?
yes please, and add it to my calendar. oh and remind me to buy a gift on Thursday`,
  code: `import { createHash } from "node:crypto";
import type { Db } from "../store/db.js";

export interface CacheEntry<T> {
  key: string;
  value: T;
  expiresAt: number;
}

/** A tiny TTL cache backed by SQLite; entries survive restarts. */
export class PersistentCache<T> {
  private readonly get$;
  private readonly put$;

  constructor(private readonly db: Db, private readonly ttlMs = 60_000) {
    this.get$ = db.prepare<[string, number], { value: string }>(
      "SELECT value FROM cache WHERE key = ? AND expires_at > ?",
    );
    this.put$ = db.prepare("INSERT OR REPLACE INTO cache (key, value, expires_at) VALUES (?, ?, ?)");
  }

  static keyOf(parts: readonly unknown[]): string {
    return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 32);
  }

  get(key: string, now = Date.now()): T | undefined {
    const row = this.get$.get(key, now);
    if (!row) return undefined;
    try {
      return JSON.parse(row.value) as T;
    } catch (err) {
      console.warn(\`cache entry \${key} is corrupt: \${(err as Error).message}\`);
      return undefined;
    }
  }

  set(key: string, value: T, now = Date.now()): void {
    this.put$.run(key, JSON.stringify(value), now + this.ttlMs);
  }
}
`,
  python: `def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping intervals; input need not be sorted."""
    if not intervals:
        return []
    intervals = sorted(intervals, key=lambda iv: iv[0])
    merged = [intervals[0]]
    for start, end in intervals[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


if __name__ == "__main__":
    print(merge_intervals([(1, 3), (2, 6), (8, 10), (15, 18), (17, 20)]))
`,
  json: `{"id":"chatcmpl-9f2c1a7e","object":"list","data":[{"id":"evt_01HZX4K8QW3V9T2M5N7P","type":"invoice.paid","created":1718035200,"livemode":false,"data":{"object":{"id":"in_1PQ8zR2eZvKYlo2C","amount_due":4999,"amount_paid":4999,"currency":"eur","customer":"cus_Q8vX3kLm9Tz2","customer_email":"ann.mueller@example.org","lines":{"data":[{"id":"il_1PQ8zR","description":"Pro plan (monthly)","quantity":1,"unit_amount":4999,"period":{"start":1718035200,"end":1720627200}}],"has_more":false},"status":"paid","hosted_invoice_url":"https://invoice.example.com/i/acct_1Nv0FG/test_YWNjdF8xTnYw","metadata":{"order_id":"ORD-2024-06-10-00417","region":"eu-central-1"}}}},{"id":"evt_01HZX4M2B7C8D9E0F1G2","type":"customer.updated","created":1718035261,"livemode":false,"data":{"object":{"id":"cus_Q8vX3kLm9Tz2","name":"Ann Müller","address":{"city":"Berlin","postal_code":"10115","country":"DE"},"preferred_locales":["de","en"]}}}],"has_more":true,"url":"/v1/events"}`,
  prettyJson: `{
  "name": "familiar",
  "version": "0.1.0",
  "tools": [
    {
      "name": "web_fetch",
      "description": "Fetch a URL and return its main text.",
      "parameters": {
        "type": "object",
        "properties": {
          "url": { "type": "string", "format": "uri" },
          "max_chars": { "type": "integer", "minimum": 100, "maximum": 200000 }
        },
        "required": ["url"]
      }
    },
    {
      "name": "exec",
      "description": "Run a shell command in the workspace.",
      "parameters": {
        "type": "object",
        "properties": {
          "command": { "type": "string" },
          "timeout_s": { "type": "number", "default": 60 }
        },
        "required": ["command"]
      }
    }
  ]
}
`,
  shell: `$ ls -la /var/log/familiar/
total 2184
drwxr-xr-x  2 familiar familiar    4096 Jun 10 09:12 .
drwxr-xr-x 14 root     root        4096 Jun  1 00:00 ..
-rw-r-----  1 familiar familiar 1843211 Jun 10 09:12 daemon.log
-rw-r-----  1 familiar familiar  389120 Jun  9 23:59 daemon.log.1.gz
$ tail -n 4 /var/log/familiar/daemon.log
{"level":30,"time":1718010732481,"pid":48213,"msg":"turn done","session":"agent:main:telegram:dm:518273645","ms":1834}
{"level":40,"time":1718010733002,"pid":48213,"msg":"provider retry","provider":"openai","status":429,"retryAfterMs":2000}
Error: connect ECONNREFUSED 127.0.0.1:11434
    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16)
    at /opt/familiar/dist/internal/models/openai-provider.js:212:19
request 7c9e6679-7425-40de-944b-e07fc1f90ae7 failed after 3 attempts: https://api.openai.com/v1/chat/completions?stream=true
`,
  markdown: `## Deployment checklist (v2.3.1)

1. Run \`npm run check\` and \`npm test\`; both must pass on Node 20.
2. Bump the version in \`package.json\` and add a **CHANGELOG.md** entry.
3. Build with \`npm run build\` and copy \`dist/\` to \`/opt/familiar/\`.
4. Restart: \`sudo systemctl restart familiar.service\`.

| Setting | Default | Notes |
|---|---|---|
| \`gateway.port\` | 18790 | loopback only unless \`bind\` is set |
| \`agents.defaults.compact.threshold\` | 0.8 | fraction of the context window |

> If the health check at http://127.0.0.1:18790/healthz fails, roll back with \`git checkout v2.3.0\`.
`,
  german: `Sehr geehrte Frau Schröder, vielen Dank für Ihre Nachricht vom 12. März. Leider müssen wir Ihnen mitteilen, dass die Lieferung Ihrer Bestellung Nr. 48-2291 wegen eines Engpasses bei unserem Zulieferer um voraussichtlich zwei Wochen verzögert wird. Selbstverständlich können Sie die Bestellung kostenfrei stornieren; in diesem Fall erstatten wir den Betrag von 249,90 € innerhalb von fünf Werktagen. Für die entstandenen Unannehmlichkeiten möchten wir uns ausdrücklich entschuldigen. Mit freundlichen Grüßen, Ihr Kundenservice-Team aus Düsseldorf.`,
  russian: `Добрый день! Напоминаем, что собрание жильцов состоится в четверг, 18 апреля, в 19:00 в помещении библиотеки на первом этаже. На повестке дня: ремонт крыши, замена домофона и выбор новой управляющей компании. Просим всех собственников принять участие или передать доверенность соседям.`,
  chinese: `明天上午十点在三楼会议室召开项目进度会议，请各位负责人提前准备本周的工作总结和下周计划。如果有无法解决的问题，请在会议前发邮件给王经理。会议预计持续一个小时，结束后会发送会议纪要。`,
  mixedIds: `Ticket JIRA-40213 links commit 3f9a2c71e0b84d5a9c6e1f2b7d8a0c4e5f6a7b8c on branch feature/compaction-lineage; deploy id dpl_8xK2mQ9vR4tL7nP1 to us-east-2 (ami-0c55b159cbfafe1f0) at 2024-06-10T09:12:44.318Z. Contact: +49 30 1234 5678, ops-oncall@example.net. See https://grafana.example.net/d/aBcD1234/api-latency?orgId=1&from=now-6h&to=now&var-env=prod and s3://backups-eu/familiar/2024/06/10/familiar.db.gz (sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855).`,
};
