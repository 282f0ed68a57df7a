/**
 * Rule 4: units and conventions in names and descriptions. `timeout: 30` is read as seconds by
 * one model and milliseconds by another; `limit` may count lines or bytes; `line: 10` may be
 * the tenth or the eleventh line. Each is a call that validates and does the wrong thing.
 *
 * Applies to numeric properties (an ISO-8601 or "30s" string carries its unit in the value).
 * The name is read as words (`maxResults` → max, results); the property's own description is
 * searched for the missing information. Heuristics, so the hints say exactly what would satisfy
 * them.
 */
import { declaredTypes } from '../walk';
import { finding, nameWords, type NodeRule } from './context';

const DURATION_WORDS = new Set([
  'timeout',
  'delay',
  'interval',
  'duration',
  'ttl',
  'wait',
  'sleep',
  'backoff',
  'period',
  'latency',
  'lease',
  'retention',
  'cooldown',
  'grace',
  'age',
  'expiry',
  'expires',
  'expiration',
  'deadline',
  'time',
  'timestamp',
  'epoch',
  'elapsed',
]);
const SIZE_WORDS = new Set(['size', 'length', 'len', 'memory', 'mem', 'capacity', 'quota', 'bandwidth', 'width', 'height']);
const INDEX_WORDS = new Set([
  'line',
  'lineno',
  'column',
  'col',
  'offset',
  'index',
  'idx',
  'position',
  'pos',
  'row',
  'page',
  'start',
  'end',
]);
/** Words that make a name a count or a bound on one (`limit`, `max_x`). */
const COUNT_WORDS = new Set(['limit', 'max', 'maximum', 'min', 'minimum', 'count', 'total', 'num', 'top', 'n']);

const UNIT_WORDS = new Set([
  'ms',
  'msec',
  'msecs',
  'millis',
  'milliseconds',
  'us',
  'usec',
  'micros',
  'microseconds',
  'ns',
  'nanos',
  'nanoseconds',
  's',
  'sec',
  'secs',
  'second',
  'seconds',
  'min',
  'mins',
  'minute',
  'minutes',
  'h',
  'hr',
  'hrs',
  'hour',
  'hours',
  'd',
  'day',
  'days',
  'week',
  'weeks',
  'b',
  'byte',
  'bytes',
  'kb',
  'kib',
  'mb',
  'mib',
  'gb',
  'gib',
  'tb',
  'px',
  'pixels',
  'pct',
  'percent',
]);
/** What a count may count. Also a unit of size (characters, lines, items). */
const COUNTED_NOUNS = new Set(
  (
    'line lines byte bytes character characters char chars item items result results match matches entry entries ' +
    'row rows record records file files token tokens message messages page pages call calls retry retries attempt ' +
    'attempts word words element elements event events object objects commit commits issue issues document documents ' +
    'hit hits step steps turn turns time times iteration iterations node nodes child children level levels depth column columns ' +
    'request requests process processes thread threads worker workers connection connections digit digits'
  ).split(' '),
);

const TIME_UNIT_TEXT =
  /\b(milli|micro|nano)?seconds?\b|\bminutes?\b|\bhours?\b|\bdays?\b|\bweeks?\b|\bISO[ -]?8601\b|\bepoch\b|\d\s*(ms|µs|us|ns|s|secs?|mins?|h|hrs?|d)\b|\bin (ms|s|secs?|mins?|h|hrs?)\b/i;
const SIZE_UNIT_TEXT = /\b(kilo|mega|giga|tera)?bytes?\b|\b[KMGT]i?B\b|\bpixels?\b|\bpercent\b|\d\s*(B|px)\b|%/;
const INDEX_BASE_TEXT =
  /\b(0|1|zero|one)[- ]?(based|indexed|origin)\b|\b(starts?|starting|begins?|beginning|counts?|counted|counting|numbered|numbering)\s+(at|from|with)\s+(0|1|zero|one)\b|\b(0|1) is the first\b|\bfirst \w+ is (0|1)\b|\bmin(imum)?\.?\s*(:|=|is|of)?\s*1\b|\b(≥|>=)\s*1\b/i;
/** "total thoughts", "maximum results", "number of steps": a count word followed by what it counts (a plural noun). */
const COUNT_PHRASE = /\b(max(imum)?|min(imum)?|total|number of|count of|up to|at most|how many|estimated)\s+(\w+\s+)?[a-z]{3,}s\b/i;

export const checkUnits: NodeRule = (n, ctx) => {
  if (n.role !== 'property' || n.name === undefined || typeof n.node === 'boolean') return [];
  const types = declaredTypes(n.node);
  if (!types.includes('number') && !types.includes('integer')) return [];
  const words = nameWords(n.name);
  const description = typeof n.node.description === 'string' ? n.node.description : '';
  const name = JSON.stringify(n.name);
  const saysCount = (text: string) =>
    [...text.toLowerCase().matchAll(/[a-z_]+/g)].some(([w]) => COUNTED_NOUNS.has(w)) ||
    /\b(number|count) of \w/i.test(text) ||
    COUNT_PHRASE.test(text);
  // A plural noun in the name beside the count word names what is counted (`totalThoughts`, `maxBeams`).
  const namesCounted = words.some((w) => COUNTED_NOUNS.has(w) || (!COUNT_WORDS.has(w) && /^[a-z]{3,}s$/.test(w) && !/(ss|us|is)$/.test(w)));

  if (words.some((w) => DURATION_WORDS.has(w))) {
    if (words.some((w) => UNIT_WORDS.has(w)) || TIME_UNIT_TEXT.test(description)) return [];
    return [
      finding(
        ctx,
        'error',
        'explicit-units',
        n.pointer,
        `${name} is a time quantity with no unit in its name or description`,
        `name the unit (e.g. ${JSON.stringify(`${n.name}_ms`)}) or state it in the description ("in milliseconds")`,
      ),
    ];
  }
  if (words.some((w) => SIZE_WORDS.has(w))) {
    if (words.some((w) => UNIT_WORDS.has(w) || COUNTED_NOUNS.has(w)) || SIZE_UNIT_TEXT.test(description) || saysCount(description))
      return [];
    return [
      finding(
        ctx,
        'error',
        'explicit-units',
        n.pointer,
        `${name} is a size with no unit in its name or description`,
        `name the unit (e.g. ${JSON.stringify(`${n.name}_bytes`)}) or say what it measures in the description (bytes, characters, lines, items)`,
      ),
    ];
  }
  // `per_page`, `perPage`, `page_size`: how many per page — a count, not a position.
  const counting = words.some((w) => COUNT_WORDS.has(w) && w !== 'num' && w !== 'n' && w !== 'top') || words.includes('per');
  if (words.some((w) => INDEX_WORDS.has(w)) && !counting) {
    // A schema minimum states the base: `minimum: 0` a 0-based position as clearly as
    // `minimum: 1` a 1-based one (a position whose least value is 0 or 1 starts there).
    const minimum =
      typeof n.node.minimum === 'number'
        ? n.node.minimum
        : typeof n.node.exclusiveMinimum === 'number'
          ? n.node.exclusiveMinimum + 1
          : null;
    // A page number whose default is 1 starts at 1 ("Page number (default: 1)").
    const firstPage = words.includes('page') && (n.node.default === 1 || /\bdefault(s)?( is| to)?:?\s*1\b/i.test(description));
    // A default of 0 is a valid position, so the first one is 0 ("Line offset (default 0)").
    const defaultZero = n.node.default === 0 || /\bdefaults?( is| to)?:?\s*0(?![.\d])/i.test(description);
    if (INDEX_BASE_TEXT.test(description) || (minimum !== null && minimum >= 0) || firstPage || defaultZero) return [];
    return [
      finding(
        ctx,
        'error',
        'index-base',
        n.pointer,
        `${name} is a position but does not say whether it starts at 0 or 1`,
        'say so in the description, e.g. "1-indexed (1 is the first line)"',
      ),
    ];
  }
  if (words.some((w) => COUNT_WORDS.has(w)) || words.includes('per')) {
    if (namesCounted || saysCount(description)) return [];
    return [
      finding(
        ctx,
        'error',
        'explicit-counts',
        n.pointer,
        `${name} is a count or limit that does not say what it counts`,
        `name what it counts (e.g. "max_results", "limit_lines") or say it in the description ("Maximum number of lines to return")`,
      ),
    ];
  }
  return [];
};
