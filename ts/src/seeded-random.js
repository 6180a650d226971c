// Math.random for a run on the agent's clock: SplitMix64 seeded from the run's seed, so
// what the client libraries draw (the openai and Anthropic SDKs' backoff jitter and log
// ids, the AI SDK's ids) is the same on every run of one seed.
//
// SplitMix64 is Steele, Lea and Flood's generator ("Fast splittable pseudorandom number
// generators", OOPSLA 2014), as in Vigna's reference splitmix64.c
// (https://prng.di.unimi.it/splitmix64.c); a double is its top 53 bits over 2^53, the
// form that page gives for converting to doubles.

const MASK_64 = (1n << 64n) - 1n;
const GOLDEN_GAMMA = 0x9e3779b97f4a7c15n;
const TWO_POW_53 = 2 ** 53;

/** A function like Math.random, drawing from SplitMix64 seeded with the u64 `seed`. */
export function seededRandom(seed) {
  let state = BigInt.asUintN(64, BigInt(seed));
  return function random() {
    state = (state + GOLDEN_GAMMA) & MASK_64;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK_64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK_64;
    z ^= z >> 31n;
    return Number(z >> 11n) / TWO_POW_53;
  };
}
