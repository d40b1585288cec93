"""The governor offline: its AWS resources on moto and the handlers' adapters wired to them
(:mod:`.environment`), the process environment an offline run sets first (:mod:`.env_vars`), moto's
DynamoDB made proportional to the request and its JSON responses written directly (:mod:`.moto_speed`,
:mod:`.moto_json`), one SNS signing key per process (:mod:`.sns_key`), botocore's User-Agent components sanitised once (:mod:`.user_agent`) and a local Slack webhook (:mod:`.slack_server`)."""
