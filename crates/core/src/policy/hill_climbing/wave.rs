//! The wave measurement: `HillClimbing::GetWaveComponent` of dotnet/coreclr
//! `src/vm/hillclimbing.cpp` (a Goertzel filter over the sample ring
//! buffers), the complex arithmetic of `src/vm/complex.h`, and the Windows
//! `min`/`max` macros whose NaN behaviour `Update` relies on.

use super::HillClimbing;

/// A complex number with the arithmetic of CoreCLR's `complex.h`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Complex {
    pub(super) re: f64,
    im: f64,
}

impl Complex {
    fn new(re: f64, im: f64) -> Complex {
        Complex { re, im }
    }
    pub(super) fn abs(self) -> f64 {
        (self.re * self.re + self.im * self.im).sqrt()
    }
    pub(super) fn scale(self, k: f64) -> Complex {
        Complex::new(self.re * k, self.im * k)
    }
    pub(super) fn div_scalar(self, k: f64) -> Complex {
        Complex::new(self.re / k, self.im / k)
    }
    pub(super) fn sub(self, other: Complex) -> Complex {
        Complex::new(self.re - other.re, self.im - other.im)
    }
    pub(super) fn div(self, other: Complex) -> Complex {
        let denom = other.re * other.re + other.im * other.im;
        Complex::new(
            (self.re * other.re + self.im * other.im) / denom,
            (self.im * other.re - self.re * other.im) / denom,
        )
    }
}

/// The Windows `max` macro, `(a > b) ? a : b`: unlike `f64::max` it does not
/// skip a NaN, which keeps the model's NaN behaviour the same as CoreCLR's.
/// (The .NET 6 port's `Math.Max` returns NaN if either side is NaN.)
pub(super) fn c_max(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// The Windows `min` macro, `(a < b) ? a : b`.
pub(super) fn c_min(a: f64, b: f64) -> f64 {
    if a < b { a } else { b }
}

impl HillClimbing {
    /// Index in the ring buffers of the `i`-th of the last `count` samples,
    /// oldest first.
    pub(super) fn ring_index(&self, count: usize, i: usize) -> usize {
        ((self.total_samples - count as u64 + i as u64) % self.samples_to_measure as u64) as usize
    }

    /// `GetWaveComponent`: the Goertzel filter over the last `count` entries of
    /// `buffer`, at the frequency of one cycle per `period` samples, divided
    /// by the number of samples.
    pub(super) fn wave_component(&self, buffer: &[f64], count: usize, period: f64) -> Complex {
        debug_assert!(count as f64 >= period, "the wave must fit in the samples");
        debug_assert!(period >= 2.0, "above the Nyquist frequency");
        let w = 2.0 * std::f64::consts::PI / period;
        let cosine = w.cos();
        let sine = w.sin();
        let coeff = 2.0 * cosine;
        let (mut q1, mut q2) = (0.0, 0.0);
        for i in 0..count {
            let q0 = coeff * q1 - q2 + buffer[self.ring_index(count, i)];
            q2 = q1;
            q1 = q0;
        }
        Complex::new(q1 - q2 * cosine, q2 * sine).div_scalar(count as f64)
    }
}
