// Strong unit types for the modeler.
//
// Convention, fixed once here and in the README: capacities are binary (GiB = 2^30 bytes), rates are decimal
// (GB/s = 1e9 B/s, TFLOP/s = 1e12 FLOP/s), the split nccl-tests makes (sizes in MiB, bandwidth / 1.0E9 / sec).
// Conversions happen at the boundary (parsers, reporters); inside the modeler only these types cross functions.
#pragma once

#include <compare>

namespace shardplan {

/// A quantity of one unit. Only the arithmetic that keeps the unit meaningful is defined.
template <class Tag>
struct Quantity {
  double v = 0.0;
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : v(value) {}
  constexpr Quantity operator+(Quantity o) const { return Quantity(v + o.v); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(v - o.v); }
  constexpr Quantity& operator+=(Quantity o) { v += o.v; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v -= o.v; return *this; }
  constexpr Quantity operator*(double k) const { return Quantity(v * k); }
  constexpr Quantity operator/(double k) const { return Quantity(v / k); }
  constexpr double operator/(Quantity o) const { return v / o.v; }  // ratio of like quantities
  constexpr auto operator<=>(const Quantity&) const = default;
};
template <class Tag>
constexpr Quantity<Tag> operator*(double k, Quantity<Tag> q) { return q * k; }

struct BytesTag {};
struct SecondsTag {};
struct FlopsTag {};
struct BytesPerSecTag {};
struct FlopsPerSecTag {};

using Bytes = Quantity<BytesTag>;
using Seconds = Quantity<SecondsTag>;
using Flops = Quantity<FlopsTag>;
using BytesPerSec = Quantity<BytesPerSecTag>;
using FlopsPerSec = Quantity<FlopsPerSecTag>;

constexpr Seconds operator/(Bytes b, BytesPerSec r) { return Seconds(b.v / r.v); }
constexpr Seconds operator/(Flops f, FlopsPerSec r) { return Seconds(f.v / r.v); }
constexpr BytesPerSec operator/(Bytes b, Seconds s) { return BytesPerSec(b.v / s.v); }
constexpr FlopsPerSec operator/(Flops f, Seconds s) { return FlopsPerSec(f.v / s.v); }

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * kKiB;
constexpr double kGiB = 1024.0 * kMiB;

constexpr Bytes bytes(double n) { return Bytes(n); }
constexpr Bytes MiB(double n) { return Bytes(n * kMiB); }
constexpr Bytes GiB(double n) { return Bytes(n * kGiB); }
constexpr BytesPerSec GBps(double n) { return BytesPerSec(n * 1e9); }
constexpr FlopsPerSec TFlops(double n) { return FlopsPerSec(n * 1e12); }
constexpr Seconds us(double n) { return Seconds(n * 1e-6); }
constexpr Seconds ms(double n) { return Seconds(n * 1e-3); }

constexpr double to_GiB(Bytes b) { return b.v / kGiB; }
constexpr double to_GBps(BytesPerSec r) { return r.v / 1e9; }
constexpr double to_TFlops(FlopsPerSec r) { return r.v / 1e12; }
constexpr double to_ms(Seconds s) { return s.v * 1e3; }
constexpr double to_us(Seconds s) { return s.v * 1e6; }

/// Network rates are quoted in gigabits per second (NICs) and converted once: 1 Gb/s = 1e9/8 B/s.
constexpr BytesPerSec Gbps(double n) { return BytesPerSec(n * 1e9 / 8.0); }

}  // namespace shardplan
