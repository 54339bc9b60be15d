export type Verdict = 'PASS' | 'WARN' | 'FAIL';

/** One line of `admin doctor`'s report (also an entry of `--json`'s `items`). */
export interface DoctorLine {
  item: string;
  verdict: Verdict;
  detail: string;
}

export const line = (item: string, verdict: Verdict, detail: string): DoctorLine => ({
  item,
  verdict,
  detail,
});
