package site.ycsb.generator;

/**
 * The fixed stream of random draws the golden vectors are made from: SplitMix64, the same
 * stream dyno's tests feed its own generators (crates/engine/src/suites/ycsb/keys.rs). The
 * script puts it in place of ThreadLocalRandom.current() and the per-thread Random in YCSB's
 * generator classes.
 */
public final class Stream {
  public static final Stream R = new Stream();
  private long state;

  public static void seed(long s) {
    R.state = s;
  }

  public long nextLong() {
    state += 0x9E3779B97F4A7C15L;
    long z = state;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  public double nextDouble() {
    return (nextLong() >>> 11) * 0x1.0p-53;
  }
}
