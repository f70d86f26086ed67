_slowlab() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="slowlab"
                ;;
            slowlab,check)
                cmd="slowlab__subcmd__check"
                ;;
            slowlab,generate)
                cmd="slowlab__subcmd__generate"
                ;;
            slowlab,help)
                cmd="slowlab__subcmd__help"
                ;;
            slowlab,load)
                cmd="slowlab__subcmd__load"
                ;;
            slowlab,merge)
                cmd="slowlab__subcmd__merge"
                ;;
            slowlab,prepare)
                cmd="slowlab__subcmd__prepare"
                ;;
            slowlab,proxy)
                cmd="slowlab__subcmd__proxy"
                ;;
            slowlab,report)
                cmd="slowlab__subcmd__report"
                ;;
            slowlab,reproduce)
                cmd="slowlab__subcmd__reproduce"
                ;;
            slowlab,serve)
                cmd="slowlab__subcmd__serve"
                ;;
            slowlab,sweep)
                cmd="slowlab__subcmd__sweep"
                ;;
            slowlab,sweep-load)
                cmd="slowlab__subcmd__sweep__subcmd__load"
                ;;
            slowlab__subcmd__generate,certificate)
                cmd="slowlab__subcmd__generate__subcmd__certificate"
                ;;
            slowlab__subcmd__generate,completions)
                cmd="slowlab__subcmd__generate__subcmd__completions"
                ;;
            slowlab__subcmd__generate,help)
                cmd="slowlab__subcmd__generate__subcmd__help"
                ;;
            slowlab__subcmd__generate,man)
                cmd="slowlab__subcmd__generate__subcmd__man"
                ;;
            slowlab__subcmd__generate,proxy-config)
                cmd="slowlab__subcmd__generate__subcmd__proxy__subcmd__config"
                ;;
            slowlab__subcmd__generate,reference)
                cmd="slowlab__subcmd__generate__subcmd__reference"
                ;;
            slowlab__subcmd__generate__subcmd__help,certificate)
                cmd="slowlab__subcmd__generate__subcmd__help__subcmd__certificate"
                ;;
            slowlab__subcmd__generate__subcmd__help,completions)
                cmd="slowlab__subcmd__generate__subcmd__help__subcmd__completions"
                ;;
            slowlab__subcmd__generate__subcmd__help,help)
                cmd="slowlab__subcmd__generate__subcmd__help__subcmd__help"
                ;;
            slowlab__subcmd__generate__subcmd__help,man)
                cmd="slowlab__subcmd__generate__subcmd__help__subcmd__man"
                ;;
            slowlab__subcmd__generate__subcmd__help,proxy-config)
                cmd="slowlab__subcmd__generate__subcmd__help__subcmd__proxy__subcmd__config"
                ;;
            slowlab__subcmd__generate__subcmd__help,reference)
                cmd="slowlab__subcmd__generate__subcmd__help__subcmd__reference"
                ;;
            slowlab__subcmd__help,check)
                cmd="slowlab__subcmd__help__subcmd__check"
                ;;
            slowlab__subcmd__help,generate)
                cmd="slowlab__subcmd__help__subcmd__generate"
                ;;
            slowlab__subcmd__help,help)
                cmd="slowlab__subcmd__help__subcmd__help"
                ;;
            slowlab__subcmd__help,load)
                cmd="slowlab__subcmd__help__subcmd__load"
                ;;
            slowlab__subcmd__help,merge)
                cmd="slowlab__subcmd__help__subcmd__merge"
                ;;
            slowlab__subcmd__help,prepare)
                cmd="slowlab__subcmd__help__subcmd__prepare"
                ;;
            slowlab__subcmd__help,proxy)
                cmd="slowlab__subcmd__help__subcmd__proxy"
                ;;
            slowlab__subcmd__help,report)
                cmd="slowlab__subcmd__help__subcmd__report"
                ;;
            slowlab__subcmd__help,reproduce)
                cmd="slowlab__subcmd__help__subcmd__reproduce"
                ;;
            slowlab__subcmd__help,serve)
                cmd="slowlab__subcmd__help__subcmd__serve"
                ;;
            slowlab__subcmd__help,sweep)
                cmd="slowlab__subcmd__help__subcmd__sweep"
                ;;
            slowlab__subcmd__help,sweep-load)
                cmd="slowlab__subcmd__help__subcmd__sweep__subcmd__load"
                ;;
            slowlab__subcmd__help__subcmd__generate,certificate)
                cmd="slowlab__subcmd__help__subcmd__generate__subcmd__certificate"
                ;;
            slowlab__subcmd__help__subcmd__generate,completions)
                cmd="slowlab__subcmd__help__subcmd__generate__subcmd__completions"
                ;;
            slowlab__subcmd__help__subcmd__generate,man)
                cmd="slowlab__subcmd__help__subcmd__generate__subcmd__man"
                ;;
            slowlab__subcmd__help__subcmd__generate,proxy-config)
                cmd="slowlab__subcmd__help__subcmd__generate__subcmd__proxy__subcmd__config"
                ;;
            slowlab__subcmd__help__subcmd__generate,reference)
                cmd="slowlab__subcmd__help__subcmd__generate__subcmd__reference"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        slowlab)
            opts="-h -V --help --version serve proxy load prepare reproduce report merge sweep sweep-load check generate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__check)
            opts="-h -V --target --server --server-cmd --server-dir --large-path --direction --upload-path --upload-bytes --upload-rate --sndbuf --header-interval --upload-ok --fast-path --max-slow --streams-per-conn --slow-rate --rcvbuf --reader --fast-rate --level-duration --ready-timeout --noise-floor --through --through-cmd --through-label --gate --label --repeat --caps --out --json --allow-remote --netns --sysctl --link --mtu --slow-upload --slow-headers --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --target)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --server-cmd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --server-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --large-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --direction)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sndbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-ok)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-slow)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --streams-per-conn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rcvbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reader)
                    COMPREPLY=($(compgen -W "strict streamreader" -- "${cur}"))
                    return 0
                    ;;
                --fast-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --level-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ready-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --noise-floor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --through)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --through-cmd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --through-label)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --label)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repeat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --caps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sysctl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mtu)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-upload)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-headers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate)
            opts="-h -V --help --version man completions reference proxy-config certificate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__certificate)
            opts="-h -V --dir --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__completions)
            opts="-h -V --shell --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --shell)
                    COMPREPLY=($(compgen -W "bash elvish fish powershell zsh" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__help)
            opts="man completions reference proxy-config certificate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__help__subcmd__certificate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__help__subcmd__completions)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__help__subcmd__man)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__help__subcmd__proxy__subcmd__config)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__help__subcmd__reference)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__man)
            opts="-h -V --out --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__proxy__subcmd__config)
            opts="-h -V --route --listen --upstream --dir --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --route)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upstream)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__generate__subcmd__reference)
            opts="-h -V --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help)
            opts="serve proxy load prepare reproduce report merge sweep sweep-load check generate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__generate)
            opts="man completions reference proxy-config certificate"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__generate__subcmd__certificate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__generate__subcmd__completions)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__generate__subcmd__man)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__generate__subcmd__proxy__subcmd__config)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__generate__subcmd__reference)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__load)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__merge)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__prepare)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__proxy)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__report)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__reproduce)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__sweep)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__help__subcmd__sweep__subcmd__load)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__load)
            opts="-h -V --target --slow --slow-rate --rcvbuf --read-chunk --large-path --reader --loop-lag --slow-upload --upload-path --upload-bytes --upload-rate --sndbuf --slow-headers --header-interval --upload-ok --fast-bind --slow-bind --http2 --h2-window --h2-conn-window --streams-per-conn --tls-ca --tls-insecure --fast-rate --fast-duration --fast-start --fast-settle --fast-path --timeout --out --label --json --allow-remote --verify --realtime --spin --end-with-fast --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --target)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rcvbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --read-chunk)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --large-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reader)
                    COMPREPLY=($(compgen -W "strict streamreader" -- "${cur}"))
                    return 0
                    ;;
                --loop-lag)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-upload)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sndbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-headers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-ok)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --h2-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --h2-conn-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --streams-per-conn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-start)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-settle)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --label)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify)
                    COMPREPLY=($(compgen -W "auto pattern length" -- "${cur}"))
                    return 0
                    ;;
                --spin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__merge)
            opts="-h -V --no-report --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__prepare)
            opts="-h -V --state-dir --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__proxy)
            opts="-h -V --listen --upstream --buffering --buffer-size --buffers --busy-buffers-size --max-temp-file-size --temp-file-write-size --temp-path --threads --read-timeout --send-timeout --stats-log --gauge-log --gauge-interval --allow-remote --request-buffering --client-body-buffer-size --client-max-body-size --client-header-timeout --client-body-timeout --keepalive-timeout --keepalive-requests --keepalive-time --worker-connections --tls-cert --tls-key --http2 --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upstream)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --buffering)
                    COMPREPLY=($(compgen -W "on off" -- "${cur}"))
                    return 0
                    ;;
                --buffer-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --buffers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --busy-buffers-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-temp-file-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --temp-file-write-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --temp-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --read-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --send-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stats-log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gauge-log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gauge-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-buffering)
                    COMPREPLY=($(compgen -W "on off" -- "${cur}"))
                    return 0
                    ;;
                --client-body-buffer-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --client-max-body-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --client-header-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --client-body-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keepalive-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keepalive-requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keepalive-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --worker-connections)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__report)
            opts="-h -V --open --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__reproduce)
            opts="-h -V --preset --runs --out --no-caps --only --no-report --shard --netns --sysctl --link --mtu --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --preset)
                    COMPREPLY=($(compgen -W "seed replica cross quick servers upload headers buffers link proxies h2" -- "${cur}"))
                    return 0
                    ;;
                --runs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --only)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shard)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sysctl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mtu)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__serve)
            opts="-h -V --listen --model --workers --large-bytes --chunk-bytes --send-log --recv-log --allow-remote --worker-timeout --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -W "sync threads async" -- "${cur}"))
                    return 0
                    ;;
                --workers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --large-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chunk-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --send-log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --recv-log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --worker-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__sweep)
            opts="-h -V --server --route --low --high --step --calls-per-conn --step-duration --timeout --slow --slow-upload --upload-path --upload-bytes --upload-rate --sndbuf --slow-headers --header-interval --upload-ok --no-caps --keep-going --out --netns --sysctl --link --mtu --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --route)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --low)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --high)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --step)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --calls-per-conn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --step-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-upload)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sndbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-headers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-ok)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sysctl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mtu)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        slowlab__subcmd__sweep__subcmd__load)
            opts="-h -V --target --rates --calls-per-conn --step-duration --timeout --slow --slow-rate --rcvbuf --read-chunk --large-path --reader --loop-lag --slow-upload --upload-path --upload-bytes --upload-rate --sndbuf --slow-headers --header-interval --upload-ok --out --stop-when-saturated --fast-path --allow-remote --json --fast-bind --slow-bind --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --target)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --calls-per-conn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --step-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rcvbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --read-chunk)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --large-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reader)
                    COMPREPLY=($(compgen -W "strict streamreader" -- "${cur}"))
                    return 0
                    ;;
                --loop-lag)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-upload)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sndbuf)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-headers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-ok)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-path)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fast-bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slow-bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _slowlab -o nosort -o bashdefault -o default slowlab
else
    complete -F _slowlab -o bashdefault -o default slowlab
fi
