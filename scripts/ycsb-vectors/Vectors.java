package site.ycsb.generator;

import site.ycsb.Utils;

/**
 * Prints the golden key sequences of YCSB's generators, one per line: a name, then the values,
 * space-separated. Each sequence starts from its own seed of Stream (SplitMix64), so dyno's
 * tests can replay exactly the same draws.
 */
public final class Vectors {
  private static final int N = 2000;

  private static void line(String name, long[] values) {
    StringBuilder sb = new StringBuilder(name);
    for (long v : values) {
      sb.append(' ').append(v);
    }
    System.out.println(sb);
  }

  public static void main(String[] args) {
    long[] out = new long[N];

    // fnvhash64 of a few key numbers, small and large.
    long[] inputs = {0, 1, 2, 3, 255, 256, 1000, 999999, 123456789012L, Long.MAX_VALUE, -1};
    long[] hashes = new long[inputs.length];
    for (int i = 0; i < inputs.length; i++) {
      hashes[i] = Utils.fnvhash64(inputs[i]);
    }
    line("fnvhash64", hashes);

    // The plain zipfian over 1,000 items (the constructor spends the first draw).
    Stream.seed(1);
    ZipfianGenerator z = new ZipfianGenerator(1000);
    for (int i = 0; i < N; i++) {
      out[i] = z.nextValue();
    }
    line("zipfian-1000", out);

    // The same, asked for more items than it was made with: zeta grows, eta keeps the old count.
    Stream.seed(5);
    ZipfianGenerator g = new ZipfianGenerator(1000);
    for (int i = 0; i < N; i++) {
      out[i] = g.nextLong(1000 + i);
    }
    line("zipfian-growing", out);

    // Workloads A, B, C, F: recordcount 1000, no inserts: scrambled over 0..=1000.
    Stream.seed(2);
    ScrambledZipfianGenerator s = new ScrambledZipfianGenerator(0, 1000);
    for (int i = 0; i < N; i++) {
      out[i] = s.nextValue();
    }
    line("scrambled-0-1000", out);

    // Workload E's: 1000 records, 1000 operations, 5% inserts: 0..=1100.
    Stream.seed(6);
    ScrambledZipfianGenerator e = new ScrambledZipfianGenerator(0, 1100);
    for (int i = 0; i < N; i++) {
      out[i] = e.nextValue();
    }
    line("scrambled-0-1100", out);

    // Workload D's latest: an acknowledged counter from 1000, one insert acknowledged after
    // every tenth draw.
    Stream.seed(3);
    AcknowledgedCounterGenerator c = new AcknowledgedCounterGenerator(1000);
    SkewedLatestGenerator l = new SkewedLatestGenerator(c);
    for (int i = 0; i < N; i++) {
      out[i] = l.nextValue();
      if (i % 10 == 9) {
        c.acknowledge(c.nextValue());
      }
    }
    line("latest-1000-ack-every-10", out);

    // Uniform over 0..=999.
    Stream.seed(4);
    UniformLongGenerator u = new UniformLongGenerator(0, 999);
    for (int i = 0; i < N; i++) {
      out[i] = u.nextValue();
    }
    line("uniform-0-999", out);
  }
}
