# bash completion for garctl(1)
_garctl()
{
	local cur prev words cword
	_init_completion 2>/dev/null || {
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD-1]}
	}
	local cmds="status clients segments lines scanners config metrics top disconnect log-level reload help"
	local opts="--socket --json --no-legend --no-pager --delay --batch --iterations --timeout --help --version"
	case $prev in
	-s|--socket)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	log-level)
		COMPREPLY=($(compgen -W "err warning notice info debug" -- "$cur")); return ;;
	help)
		COMPREPLY=($(compgen -W "$cmds" -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
	fi
}
complete -F _garctl garctl
