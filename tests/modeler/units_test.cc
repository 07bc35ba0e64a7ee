#include "modeler/units.h"

#include <doctest/doctest.h>

using namespace shardplan;

TEST_SUITE("units") {

TEST_CASE("capacities are binary, rates decimal") {
  CHECK(MiB(1).v == 1048576.0);
  CHECK(GiB(1).v == 1073741824.0);
  CHECK(bytes(5).v == 5.0);
  CHECK(GBps(1).v == 1e9);
  CHECK(TFlops(1).v == 1e12);
  CHECK(us(1).v == 1e-6);
  CHECK(ms(1).v == 1e-3);
  // NICs are quoted in gigabits: 400 Gb/s = 50 GB/s.
  CHECK(Gbps(400).v == 50e9);
  CHECK(to_GiB(GiB(80)) == 80.0);
  CHECK(to_GBps(GBps(900)) == 900.0);
  CHECK(to_TFlops(TFlops(989.4)) == doctest::Approx(989.4));
  CHECK(to_ms(Seconds(0.25)) == 250.0);
  CHECK(to_us(Seconds(0.5)) == 500000.0);
}

TEST_CASE("only unit-preserving arithmetic; rates turn amounts into time") {
  // 1 GB over 100 GB/s is 10 ms; 1 PFLOP at 100 TFLOP/s is 10 s.
  CHECK((Bytes(1e9) / GBps(100)).v == doctest::Approx(0.01));
  CHECK((Flops(1e15) / TFlops(100)).v == doctest::Approx(10.0));
  CHECK((Bytes(1e9) / Seconds(2)).v == 5e8);
  CHECK((Flops(6e12) / Seconds(3)).v == 2e12);
  CHECK(GiB(3) / GiB(1) == 3.0);  // a ratio of like quantities is a plain number
  CHECK((GiB(1) + MiB(512)).v == 1.5 * 1073741824.0);
  CHECK((GiB(1) - MiB(512)).v == 0.5 * 1073741824.0);
  CHECK((2.0 * us(3)).v == doctest::Approx(6e-6).scale(0));
  CHECK((us(3) * 2.0).v == doctest::Approx(6e-6).scale(0));
  CHECK((us(3) / 3.0).v == doctest::Approx(1e-6).scale(0));
  Bytes b = GiB(1);
  b += GiB(1);
  CHECK(b == GiB(2));
  b -= GiB(2);
  CHECK(b.v == 0.0);
  CHECK(MiB(1) < GiB(1));
  CHECK(Seconds().v == 0.0);
  static_assert(GiB(2) / MiB(1) == 2048.0);  // the whole type is constexpr
}

}
