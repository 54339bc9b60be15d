import type { Command } from 'commander';
import { UsageError } from './command.js';

/** Every command path with its options, read from the commander tree (so completion never drifts). */
function commandTree(program: Command): Array<{ path: string; words: string[] }> {
  const out: Array<{ path: string; words: string[] }> = [];
  const walk = (cmd: Command, path: string[]) => {
    const words = [
      ...cmd.commands.map((c) => c.name()),
      ...cmd.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined)),
      '--help',
    ];
    out.push({ path: path.join(' '), words });
    for (const sub of cmd.commands) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  return out;
}

/** A bash completion script: the words after the deepest command path already typed. */
export function bashCompletion(program: Command): string {
  const name = program.name();
  const cases = commandTree(program)
    .map(({ path, words }) => `    "${path}") words="${words.join(' ')}" ;;`)
    .join('\n');
  return `# bash completion for \`npm run ${name} --\` (issuer-kit); source it from ~/.bashrc
_issuer_kit_${name}() {
  local cur cmdpath="" w words
  cur="\${COMP_WORDS[COMP_CWORD]}"
  for w in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case "$w" in -*) ;; *) if _issuer_kit_${name}_words "\${cmdpath:+$cmdpath }$w" >/dev/null; then cmdpath="\${cmdpath:+$cmdpath }$w"; fi ;; esac
  done
  words="$(_issuer_kit_${name}_words "$cmdpath")"
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
_issuer_kit_${name}_words() {
  local words
  case "$1" in
${cases}
    *) return 1 ;;
  esac
  echo "$words"
}
complete -F _issuer_kit_${name} ${name}
`;
}

/** A zsh completion script (compdef), the same words per command path. */
export function zshCompletion(program: Command): string {
  const name = program.name();
  const cases = commandTree(program)
    .map(({ path, words }) => `    "${path}") cands=(${words.join(' ')}) ;;`)
    .join('\n');
  return `#compdef ${name}
# zsh completion for \`npm run ${name} --\` (issuer-kit); put it on $fpath as _${name}
_issuer_kit_${name}() {
  local cmdpath="" w
  local -a cands
  for w in "\${(@)words[2,CURRENT-1]}"; do
    case "$w" in -*) ;; *) cmdpath="\${cmdpath:+$cmdpath }$w" ;; esac
  done
  case "$cmdpath" in
${cases}
    *) cands=() ;;
  esac
  compadd -- $cands
}
compdef _issuer_kit_${name} ${name}
`;
}

export const completionCommand = (program: Command, act: import('./command.js').Act) => {
  program
    .command('completion')
    .description('print a shell completion script: completion bash|zsh')
    .argument('<shell>', 'bash or zsh')
    .action(
      act(async (run, shell: string) => {
        if (shell === 'bash') run.io.out(bashCompletion(program));
        else if (shell === 'zsh') run.io.out(zshCompletion(program));
        else throw new UsageError(`completion: unknown shell ${shell} (allowed: bash, zsh)`);
        return 0;
      }),
    );
};
