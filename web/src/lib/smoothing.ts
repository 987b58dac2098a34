/**
 * TensorBoard's debiased exponential moving average.
 * last = last*w + (1-w)*v; smoothed = last / (1 - w^n), n = finite values seen so far.
 * Non-finite values pass through unsmoothed and do not enter the average; null stays null.
 */
export function debiasedEma(values: ArrayLike<number | null>, w: number): (number | null)[] {
  const out: (number | null)[] = new Array(values.length)
  if (w <= 0) {
    for (let i = 0; i < values.length; i++) out[i] = values[i]
    return out
  }
  let last = 0
  let n = 0
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (v === null) {
      out[i] = null
      continue
    }
    if (!Number.isFinite(v)) {
      out[i] = v
      continue
    }
    last = last * w + (1 - w) * v
    n++
    const debias = w === 1 ? 1 : 1 - Math.pow(w, n)
    out[i] = last / debias
  }
  return out
}
