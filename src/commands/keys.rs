//! `quarry keys`: API keys in a key store (a JSON file or Redis) issued, listed, changed and
//! revoked.

use eyre::Result;
use quarry_gateway::keys::KeySource;

#[derive(clap::Args)]
pub struct KeysArgs {
    /// The key store: a JSON file (created on the first `add`), or a redis:// URL.
    #[arg(long)]
    store: String,
    #[command(subcommand)]
    action: KeysAction,
}

#[derive(clap::Subcommand)]
enum KeysAction {
    /// Issue a new key and print it (it is shown only this once; only its hash is stored).
    Add(AddArgs),
    /// Replace a key's allowlists (each type given replaces that type's list); a running
    /// server applies the change within a second, to open WebSockets too.
    Update(UpdateArgs),
    /// List the keys: id, plan, name, networks, created and revoked times, allowlists.
    List,
    /// Revoke a key by its id; a running server refuses it within a second.
    Revoke { id: String },
}

#[derive(clap::Args)]
struct AddArgs {
    #[arg(long)]
    plan: quarry_gateway::Plan,
    /// Who the key is for.
    #[arg(long, default_value = "")]
    name: String,
    /// Limit the key to this network (repeat for several); default: every network.
    #[arg(long = "network")]
    networks: Vec<String>,
    #[command(flatten)]
    allow: AllowArgs,
    /// Give the key a secret, printed once after the key (the store keeps its hash): a
    /// request carrying it as HTTP Basic auth (`curl --user :SECRET`) is not held to the
    /// allowlists.
    #[arg(long)]
    secret: bool,
    /// Refuse requests without the secret (401).
    #[arg(long, requires = "secret")]
    require_secret: bool,
    #[command(flatten)]
    jwt: JwtArgs,
}

#[derive(clap::Args)]
struct UpdateArgs {
    id: String,
    #[command(flatten)]
    allow: AllowArgs,
    /// Remove every allowlist first (then add the ones given, if any).
    #[arg(long)]
    clear_allowlists: bool,
    /// Draw a new secret and print it once (the old one stops working).
    #[arg(long)]
    new_secret: bool,
    /// Refuse requests without the secret from now on.
    #[arg(long, conflicts_with = "no_require_secret")]
    require_secret: bool,
    /// Accept requests without the secret again.
    #[arg(long)]
    no_require_secret: bool,
    #[command(flatten)]
    jwt: JwtArgs,
}

/// A key's JWT public keys on the command line (`quarry keys update`).
#[derive(clap::Args)]
struct JwtArgs {
    /// Accept JWTs signed with this public key (PEM: RSA for RS256, EC P-256 for ES256), named
    /// NAME, the tokens' `kid` (repeatable; a name given again replaces its key).
    #[arg(long = "jwt-key", value_name = "NAME=PEMFILE")]
    add: Vec<String>,
    /// Stop accepting JWTs signed with the public key named NAME (repeatable).
    #[arg(long = "remove-jwt-key", value_name = "NAME")]
    remove: Vec<String>,
    /// Refuse requests without a valid JWT (401), unless they carry the key's secret.
    #[arg(long, conflicts_with = "no_require_jwt")]
    require_jwt: bool,
    /// Accept requests without a JWT again.
    #[arg(long)]
    no_require_jwt: bool,
}

impl JwtArgs {
    fn is_empty(&self) -> bool {
        self.add.is_empty() && self.remove.is_empty() && !self.require_jwt && !self.no_require_jwt
    }

    /// The change they ask for, with the public keys they name read and parsed.
    fn change(self) -> Result<quarry_gateway::keys::JwtChange> {
        use quarry_gateway::key_jwts::JwtPublicKey;
        let mut add = Vec::new();
        for given in &self.add {
            let (name, file) = given
                .split_once('=')
                .ok_or_else(|| eyre::eyre!("--jwt-key {given:?}: write NAME=PEMFILE"))?;
            let pem = std::fs::read_to_string(file)
                .map_err(|e| eyre::eyre!("--jwt-key {name}: cannot read {file}: {e}"))?;
            let key = JwtPublicKey::from_pem(&pem)
                .map_err(|e| eyre::eyre!("--jwt-key {name}: {file}: {e}"))?;
            add.push((name.to_string(), key));
        }
        let require = match (self.require_jwt, self.no_require_jwt) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        Ok(quarry_gateway::keys::JwtChange {
            add,
            remove: self.remove,
            require,
        })
    }

    /// The change for a new key, which has nothing to remove and requires no JWT yet.
    fn new_key_change(self) -> Result<quarry_gateway::keys::JwtChange> {
        if !self.remove.is_empty() || self.no_require_jwt {
            eyre::bail!(
                "--remove-jwt-key and --no-require-jwt change an existing key: use `quarry keys update`"
            );
        }
        self.change()
    }
}

/// A key's JWT public keys in one `quarry keys list` column.
fn jwt_column(record: &quarry_gateway::keys::KeyRecord) -> String {
    let keys: Vec<String> = record
        .jwt_keys
        .iter()
        .map(|(name, key)| format!("{name}:{}", key.alg.name()))
        .collect();
    match (keys.is_empty(), record.require_jwt) {
        (true, _) => "-".into(),
        (false, true) => format!("required,{}", keys.join(",")),
        (false, false) => keys.join(","),
    }
}

/// A key's allowlists on the command line. A key without allowlists accepts everything;
/// the types are ANDed, the entries of one type ORed; at most 30 entries per type.
#[derive(clap::Args, Default)]
struct AllowArgs {
    /// Allow pages on this origin: [scheme://]host[:port], the host possibly *.name for its
    /// subdomains (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    origins: Vec<String>,
    /// Allow requests whose User-Agent contains this text (repeatable).
    #[arg(long = "allow-user-agent", value_name = "TEXT")]
    user_agents: Vec<String>,
    /// Allow this JSON-RPC method (repeatable).
    #[arg(long = "allow-method", value_name = "NAME")]
    methods: Vec<String>,
    /// Allow calls that name this contract address (repeatable); see the README for the
    /// methods that name addresses.
    #[arg(long = "allow-contract", value_name = "ADDRESS")]
    contracts: Vec<String>,
}

impl AllowArgs {
    /// Applies the lists given onto `allow`: each type given replaces that type's list.
    fn apply(
        self,
        mut allow: quarry_gateway::allowlists::KeyAllowlists,
    ) -> Result<quarry_gateway::allowlists::KeyAllowlists> {
        use quarry_gateway::cors::OriginPattern;
        if !self.origins.is_empty() {
            allow.origins = self
                .origins
                .iter()
                .map(|o| OriginPattern::parse(o))
                .collect::<Result<_, _>>()
                .map_err(|e| eyre::eyre!("--allow-origin: {e}"))?;
        }
        if !self.user_agents.is_empty() {
            allow.user_agents = self.user_agents;
        }
        if !self.methods.is_empty() {
            allow.methods = self.methods;
        }
        if !self.contracts.is_empty() {
            allow.contracts = self
                .contracts
                .iter()
                .map(|a| quarry_gateway::allowlists::parse_contract(a))
                .collect::<Result<_, _>>()
                .map_err(|e| eyre::eyre!("--allow-contract: {e}"))?;
        }
        allow.check().map_err(|e| eyre::eyre!("{e}"))?;
        Ok(allow)
    }
}

/// A key's allowlists in one `quarry keys list` column.
fn allowlists_column(allow: &quarry_gateway::allowlists::KeyAllowlists) -> String {
    let mut parts = Vec::new();
    let mut add = |kind: &str, entries: Vec<String>| {
        if !entries.is_empty() {
            parts.push(format!("{kind}={}", entries.join(",")));
        }
    };
    add(
        "origin",
        allow
            .origins
            .iter()
            .map(|o| o.as_str().to_string())
            .collect(),
    );
    add("user-agent", allow.user_agents.clone());
    add("method", allow.methods.clone());
    add(
        "contract",
        allow.contracts.iter().map(|a| a.to_string()).collect(),
    );
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

pub fn run(args: KeysArgs) -> Result<()> {
    let store = KeySource::parse(&args.store)?;
    match args.action {
        KeysAction::Add(args) => add(&store, args),
        KeysAction::List => list(&store),
        KeysAction::Update(args) => update(&store, args),
        KeysAction::Revoke { id } => {
            let record = store.revoke(&id)?;
            eprintln!("revoked {} ({})", record.id, record.name);
            Ok(())
        }
    }
}

fn add(store: &KeySource, args: AddArgs) -> Result<()> {
    let AddArgs {
        plan,
        name,
        networks,
        allow,
        secret,
        require_secret,
        jwt,
    } = args;
    let networks = (!networks.is_empty()).then_some(networks);
    let allow = allow.apply(Default::default())?;
    // The JWT change is checked with the new record, before it is stored: a refused
    // one adds no key.
    let jwt = jwt.new_key_change()?;
    let (key, record) = store.add(plan, name, networks, allow, jwt)?;
    let secret = if secret {
        store.set_secret(&record.id, true, Some(require_secret))?.1
    } else {
        None
    };
    eprintln!(
        "added {} ({} plan); the key is shown only now:",
        record.id,
        plan.name()
    );
    println!("{key}");
    if let Some(secret) = secret {
        eprintln!("and its secret, also shown only now:");
        println!("{secret}");
    }
    Ok(())
}

fn list(store: &KeySource) -> Result<()> {
    println!("id\tplan\tname\tnetworks\tallowlists\tsecret\tjwt\tcreated\trevoked");
    for key in &store.list()? {
        let secret = match (key.secret_hash.is_some(), key.require_secret) {
            (true, true) => "required",
            (true, false) => "yes",
            (false, _) => "-",
        };
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            key.id,
            key.plan.name(),
            key.name,
            key.networks
                .as_ref()
                .map_or("all".to_string(), |n| n.join(",")),
            allowlists_column(&key.allow),
            secret,
            jwt_column(key),
            key.created,
            key.revoked.map_or("-".to_string(), |t| t.to_string()),
        );
    }
    Ok(())
}

fn update(store: &KeySource, args: UpdateArgs) -> Result<()> {
    let UpdateArgs {
        id,
        allow,
        clear_allowlists,
        new_secret,
        require_secret,
        no_require_secret,
        jwt,
    } = args;
    let current = store
        .list()?
        .into_iter()
        .find(|k| k.id == id)
        .ok_or_else(|| eyre::eyre!("no key with id {id:?} in the key store"))?;
    // Read before anything changes, so a bad file changes nothing.
    let jwt_change = (!jwt.is_empty()).then(|| jwt.change()).transpose()?;
    let base = if clear_allowlists {
        Default::default()
    } else {
        current.allow
    };
    let mut record = store.set_allowlists(&id, allow.apply(base)?)?;
    let require = match (require_secret, no_require_secret) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    if new_secret || require.is_some() {
        let (changed, secret) = store.set_secret(&id, new_secret, require)?;
        record = changed;
        if let Some(secret) = secret {
            eprintln!("the new secret of {id}, shown only now:");
            println!("{secret}");
        }
    }
    if let Some(change) = jwt_change {
        record = store.set_jwt(&id, change)?;
    }
    eprintln!(
        "updated {} ({}): allowlists {}; JWT keys {}",
        record.id,
        record.name,
        allowlists_column(&record.allow),
        jwt_column(&record)
    );
    Ok(())
}
