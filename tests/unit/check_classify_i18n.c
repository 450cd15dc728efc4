/* The classifier on the words of nine languages: English, Chinese,
 * Japanese, Korean, Russian, Spanish, Portuguese, German, French. Localized
 * front ends end nearly every message with "try again", so each behaviour is
 * checked in every language, with the row's language named in a failure. */
#include "core/classify.h"

#include <check.h>
#include <string.h>

Suite *classify_i18n_suite(void);

struct said {
	const char *lang;
	const char *text;
};

static struct classify *cls;

static void setup(void)
{
	char err[256] = "";

	cls = classify_new(NULL, err, sizeof(err));
	ck_assert_msg(cls != NULL, "%s", err);
}

static void teardown(void)
{
	classify_free(cls);
	cls = NULL;
}

static void expect_all(const struct said *rows, size_t n, enum classify_verdict verdict)
{
	for (size_t i = 0; i < n; i++) {
		struct classify_input in = { .text = rows[i].text, .len = strlen(rows[i].text) };
		struct classify_result out;

		classify_decide(cls, &in, &out);
		ck_assert_msg(out.verdict == verdict, "%s: %s: %s, not %s (rule %s)", rows[i].lang,
			      rows[i].text, classify_class_name(out.verdict),
			      classify_class_name(verdict), out.rule);
	}
}

#define EXPECT_ALL(rows, verdict) expect_all(rows, sizeof(rows) / sizeof(rows[0]), verdict)

/* No permission, no such page, a wrong key, a region not served: final,
 * though the sentence ends "check it and try again". */
START_TEST(test_a_refusal_ending_in_try_again_is_final_in_every_language)
{
	static const struct said rows[] = {
		{ "en", "You do not have permission to access this model. Please try again." },
		{ "zh", "没有权限访问该模型，请检查后重试" },
		{ "zh", "API Key 无效，请重试" },
		{ "ja", "このコンテンツにアクセスする権限がありません。もう一度お試しください" },
		{ "ja", "APIキーが正しくないか空です。確認してから再試行してください。" },
		{ "ko", "요청한 리소스를 찾을 수 없습니다. 다시 시도해 주세요." },
		{ "ko", "현재 위치는 해당 서비스를 지원하지 않습니다. 다시 시도해 주세요." },
		{ "ru", "Ключ API недействителен, пожалуйста, проверьте его и повторите попытку" },
		{ "ru", "Сервер не может найти запрошенный ресурс. Повторите попытку." },
		{ "es", "No tienes permiso para acceder a este servicio. Inténtalo de nuevo." },
		{ "es", "El servidor no puede encontrar el recurso solicitado, vuelva a intentarlo" },
		{ "pt", "Você não tem permissão para acessar este serviço. Tente novamente." },
		{ "pt", "O servidor não encontrou o recurso solicitado. Tente novamente." },
		{ "de", "Sie haben keine Berechtigung für diesen Dienst. Versuchen Sie es erneut." },
		{ "de", "Das Modell wurde nicht gefunden. Bitte versuchen Sie es erneut." },
		{ "fr", "Vous n'avez pas la permission d'accéder à ce service. Veuillez réessayer." },
		{ "fr", "Le serveur n'a pas pu trouver la ressource demandée. Réessayez." },
	};

	EXPECT_ALL(rows, CLASSIFY_NOT_RETRYABLE);
}
END_TEST

/* ... but a refusal word next to a 5xx or a 429 gives way to the status. */
START_TEST(test_a_localized_refusal_word_gives_way_to_a_server_status)
{
	struct classify_input in = {
		.text = "503 Der Dienst ist vorübergehend nicht verfügbar (Berechtigung wird geprüft)",
		.status = 503,
	};
	struct classify_result out;

	in.len = strlen(in.text);
	classify_decide(cls, &in, &out);
	ck_assert_str_eq(classify_class_name(out.verdict), "retryable");
}
END_TEST

/* A broken or busy server, an internal error, a timeout: retried. */
START_TEST(test_a_server_side_failure_is_retried_in_every_language)
{
	static const struct said rows[] = {
		{ "en", "Something went wrong on our side, the stream ended unexpectedly" },
		{ "zh", "内部服务错误，请稍候再试" },
		{ "zh", "上游服务返回异常" },
		{ "ja", "サーバーに一時的な問題が発生しました。しばらくしてから再試行してください" },
		{ "ko", "서버에 일시적인 문제가 발생했습니다. 잠시 후에 다시 시도해주세요." },
		{ "ru", "Внутренняя ошибка сервера, повторите попытку позже" },
		{ "es", "Error interno del servidor, el servicio está ocupado" },
		{ "pt", "O servidor está temporariamente indisponível" },
		{ "de", "Interner Serverfehler, bitte erneut versuchen" },
		{ "fr", "Erreur interne du serveur, veuillez réessayer plus tard" },
	};

	EXPECT_ALL(rows, CLASSIFY_RETRYABLE);
}
END_TEST

/* The request is larger than the model or the server takes. */
START_TEST(test_a_request_too_large_is_an_overflow_in_every_language)
{
	static const struct said rows[] = {
		{ "en", "The request payload is too large for this model" },
		{ "zh", "请求内容过大，超过了模型的最大上下文" },
		{ "ja", "リクエストデータが大きすぎてサーバーが処理できません" },
		{ "ko", "요청 데이터 양이 너무 많아 서버가 처리할 수 없습니다" },
		{ "ru", "Ваш запрос слишком велик, сервер не может его обработать" },
		{ "es", "Su solicitud es demasiado grande para ser procesada" },
		{ "pt", "Sua solicitação contém uma quantidade de dados muito grande" },
		{ "de", "Ihre Anfragedaten sind zu groß" },
		{ "fr", "Votre demande contient une quantité de données trop importante" },
	};

	EXPECT_ALL(rows, CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

/* A free plan sent to a paid one, a subscription used up, a balance spent. */
START_TEST(test_a_spent_plan_or_balance_is_a_usage_limit_in_every_language)
{
	static const struct said rows[] = {
		{ "en", "You've reached your monthly message limit. Upgrade to continue." },
		{ "zh", "免费额度已用完，请升级到付费套餐" },
		{ "ja", "無料プランの上限に達しました。有料プランにアップグレードしてください" },
		{ "ko", "무료 사용량을 모두 사용했습니다. 유료 플랜으로 업그레이드하세요" },
		{ "ru", "Лимит бесплатного тарифа исчерпан, перейдите на платный тариф" },
		{ "es", "Has alcanzado el límite de tu suscripción" },
		{ "pt", "Você é um usuário gratuito, faça upgrade para um plano pago" },
		{ "de", "Sie sind ein kostenloser Benutzer, bitte wechseln Sie zu einem kostenpflichtigen Abonnement" },
		{ "fr", "Votre quota d'abonnement est épuisé" },
	};

	EXPECT_ALL(rows, CLASSIFY_USAGE_LIMIT);
}
END_TEST

/* When no step knows the text, a generic permanent word is final. */
START_TEST(test_a_generic_permanent_word_is_final_when_nothing_else_speaks)
{
	static const struct said rows[] = {
		{ "en", "The requested endpoint does not exist" },
		{ "zh", "该功能不支持" },
		{ "ja", "指定されたモデルは存在しません" },
		{ "ko", "지원되지 않는 형식입니다" },
		{ "ru", "Параметр недопустим" },
		{ "es", "Formato no soportado" },
		{ "pt", "Parâmetro não suportado" },
		{ "de", "Das Format ist ungültig" },
		{ "fr", "Format non pris en charge" },
	};

	EXPECT_ALL(rows, CLASSIFY_NOT_RETRYABLE);
}
END_TEST

/* A translated front end's own notices (Roo Code's locales): a failed stream,
 * the provider's server error and an empty or incomplete answer are retried;
 * a refused key and a request the provider cannot take as made are final;
 * spent funds are a usage limit. A busy server that "cannot process requests
 * right now" stays retried. */
START_TEST(test_a_front_ends_translated_notices_are_judged_in_every_language)
{
	static const struct said retried[] = {
		{ "zh", "API流式传输失败" },
		{ "zh", "模型未提供任何响应内容。这可能表示 API 或模型输出存在问题。" },
		{ "ja", "APIストリーミング失敗" },
		{ "ja", "プロバイダー サーバー エラー。プロバイダー側に問題があります。" },
		{ "ja", "モデルの応答が不完全" },
		{ "ko", "API 스트리밍 실패" },
		{ "ko", "너무 많은 요청입니다. 다음 API 호출 전에 잠깐 기다려주세요." },
		{ "ru", "Ошибка потокового API-запроса" },
		{ "ru", "Неполный ответ модели" },
		{ "es", "Transmisión API falló" },
		{ "es", "El modelo no proporcionó ningún contenido de respuesta." },
		{ "pt", "Streaming API falhou" },
		{ "pt", "Erro do servidor do provedor. Algo está errado do lado do provedor." },
		{ "de", "API-Streaming fehlgeschlagen" },
		{ "de", "Das Modell hat keinen Antwortinhalt geliefert." },
		{ "fr", "Échec du streaming API" },
		{ "fr", "Trop de demandes. Vous êtes limité par le fournisseur." },
		{ "ko", "서버가 현재 요청을 처리할 수 없습니다. 잠시 후에 다시 시도해 주세요." },
	};
	static const struct said final[] = {
		{ "zh", "无法向提供商进行身份验证。请检查您的 API 密钥配置。" },
		{ "ja", "プロバイダーで認証できませんでした。API キーの設定を確認してください。" },
		{ "ko", "공급자로 인증할 수 없습니다. API 키 구성을 확인하세요." },
		{ "ru", "Провайдер не смог обработать запрос. Остановите задачу." },
		{ "es", "No se pudo autenticar con el proveedor." },
		{ "pt", "O provedor não conseguiu processar a solicitação conforme feita." },
		{ "de", "Der Anbieter konnte die Anfrage nicht wie gestellt verarbeiten." },
		{ "fr", "Impossible de s'authentifier auprès du fournisseur." },
	};
	static const struct said spent[] = {
		{ "zh", "您的账户余额/积分似乎已用尽。请前往提供商处充值以继续。" },
		{ "ru", "Похоже, у вас закончились средства/кредиты на вашем счете." },
		{ "es", "Parece que se te han acabado los fondos/créditos en tu cuenta." },
		{ "pt", "Parece que você ficou sem fundos/créditos em sua conta." },
		{ "fr", "Il semble que vous ayez épuisé vos fonds/crédits sur votre compte." },
	};

	EXPECT_ALL(retried, CLASSIFY_RETRYABLE);
	EXPECT_ALL(final, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(spent, CLASSIFY_USAGE_LIMIT);
}
END_TEST

/* "Too many requests" and "demand is too high" are a rate, not a size: a
 * size word is what makes a request too large, with or without a status. */
START_TEST(test_too_many_requests_or_too_high_a_demand_is_no_overflow)
{
	static const struct said rows[] = {
		{ "ko", "요청이 너무 많아 잠시 후 다시 시도해주세요" },
		{ "fr", "La demande est trop importante, réessayez" },
	};
	static const int statuses[] = { 0, 429, 503 };

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		for (size_t k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++) {
			struct classify_input in = { .text = rows[i].text, .len = strlen(rows[i].text),
						     .status = statuses[k] };
			struct classify_result out;

			classify_decide(cls, &in, &out);
			ck_assert_msg(out.verdict == CLASSIFY_RETRYABLE, "%s (status %d): %s (rule %s)",
				      rows[i].text, statuses[k], classify_class_name(out.verdict),
				      out.rule);
		}
	}
}
END_TEST

/* Words of the eleventh batch's tuned rows, in other sentences: an expired
 * token is final, a quota short is a usage limit, a rate limit in Russian
 * or Portuguese is retried, a saturated pool is an overload (its class
 * from the sentence's other words). */
START_TEST(test_expired_tokens_short_quotas_rate_words_and_saturation_in_other_sentences)
{
	static const struct said final[] = {
		{ "ja", "アクセストークンの有効期限が切れました。再ログインしてください" },
		{ "ja", "APIキーは期限切れです" },
		{ "ko", "액세스 토큰이 만료되었습니다" },
	};
	static const struct said spent[] = {
		{ "ko", "계정의 API 할당량이 부족하여 요청을 처리할 수 없습니다" },
	};
	static const struct said rate[] = {
		{ "ru", "Достигнут лимит скорости, повторите через минуту" },
		{ "pt", "O limite de taxa foi atingido para este modelo" },
	};
	static const struct said busy[] = {
		{ "fr", "Le service est saturé pour le moment, réessayez plus tard" },
		{ "es", "Los servidores están saturados, inténtelo más tarde" },
		{ "de", "Das Modell ist derzeit ausgelastet, bitte später erneut versuchen" },
		{ "ja", "サーバーがオーバーロードしています。しばらくしてから再試行してください" },
	};

	EXPECT_ALL(final, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(spent, CLASSIFY_USAGE_LIMIT);
	EXPECT_ALL(rate, CLASSIFY_RETRYABLE);
	EXPECT_ALL(busy, CLASSIFY_RETRYABLE);
	for (size_t i = 0; i < sizeof(busy) / sizeof(busy[0]); i++) {
		struct classify_input in = { .text = busy[i].text, .len = strlen(busy[i].text) };
		struct classify_result out;

		classify_decide(cls, &in, &out);
		ck_assert_msg(out.overload, "%s: not an overload (rule %s)", busy[i].text, out.rule);
	}
}
END_TEST

/* A token cap over a day is a plan window, over a minute a rate window:
 * neither is the model's length. */
START_TEST(test_a_token_cap_over_a_day_or_a_minute_is_no_overflow)
{
	static const struct said daily[] = {
		{ "ja", "1日のトークン上限に達しました" },
		{ "ko", "일일 토큰 한도 초과" },
		{ "zh", "今日token数已超过限额" },
	};
	static const struct said minute[] = {
		{ "zh", "每分钟token数超过限制" },
		{ "en", "token limit reached for this minute" },
		{ "en", "You exceeded your token limit per minute, retry in 20s" },
	};
	const char *hinted = minute[2].text;
	struct classify_input in = { .text = hinted, .len = strlen(hinted) };
	struct classify_result out;

	EXPECT_ALL(daily, CLASSIFY_USAGE_LIMIT);
	EXPECT_ALL(minute, CLASSIFY_RETRYABLE);
	classify_decide(cls, &in, &out);
	ck_assert_int_eq(out.hint_ms, 20000);
}
END_TEST

/* "Too long" of a wait, and a response too large, are no prompt too long. */
START_TEST(test_too_long_a_wait_or_too_large_a_response_is_no_overflow)
{
	static const struct said rows[] = {
		{ "en", "Generating the content took too long" },
		{ "en", "503 Service Unavailable: the response body was too large to buffer" },
		{ "pt", "O tempo de espera foi muito longo" },
		{ "ru", "Время ожидания слишком длинное, сервер не ответил" },
		{ "es", "La espera fue demasiado larga, inténtalo de nuevo" },
		{ "de", "Die Antwort dauerte zu lang. Versuchen Sie es erneut." },
		{ "fr", "Le délai de réponse était trop long, réessayez" },
	};
	static const struct said overflow[] = {
		{ "pt", "O texto de entrada é muito longo para o modelo" },
		{ "ru", "Ваш запрос слишком длинный для этой модели" },
		{ "es", "El mensaje es demasiado largo para el modelo" },
		{ "de", "Die Eingabe ist zu lang für dieses Modell" },
		{ "fr", "Le message est trop long pour ce modèle" },
	};

	EXPECT_ALL(rows, CLASSIFY_RETRYABLE);
	EXPECT_ALL(overflow, CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

/* A refusal word beats a "retry" that a localized message ends with. */
START_TEST(test_a_refusal_word_beats_a_trailing_retry_word)
{
	static const struct said rows[] = {
		{ "zh", "该模型暂时不支持图片输入" },
		{ "zh", "账号已被禁止使用，请联系管理员后重试" },
		{ "ru", "Недопустимый параметр temperature, повторите запрос" },
		{ "en", "This model is unavailable in your region" },
	};

	EXPECT_ALL(rows, CLASSIFY_NOT_RETRYABLE);
}
END_TEST

/* A busy free model or a server out of GPU memory is no spent plan. */
START_TEST(test_a_busy_free_model_or_a_full_gpu_is_no_spent_plan)
{
	static const struct said rows[] = {
		{ "zh", "免费模型当前繁忙，请稍后重试或升级为付费用户" },
		{ "en", "The server used all available GPU memory, CUDA out of memory" },
	};
	static const struct said spent[] = {
		{ "zh", "免费用户的额度已用完，请升级为付费用户" },
		{ "en", "You have used all of your monthly credits" },
	};

	EXPECT_ALL(rows, CLASSIFY_RETRYABLE);
	EXPECT_ALL(spent, CLASSIFY_USAGE_LIMIT);
}
END_TEST

/* The refusal words of every language beat the "retry" their sentence ends
 * with; an invalid answer is no refusal. */
START_TEST(test_a_generic_refusal_beats_a_trailing_retry_in_every_language)
{
	static const struct said rows[] = {
		{ "ja", "無効なパラメータです。再試行してください" },
		{ "ja", "このモデルは存在しません。再試行してください" },
		{ "ko", "잘못된 매개변수입니다. 재시도하세요" },
		{ "es", "Parámetro inválido, reintente la solicitud" },
		{ "pt", "Parâmetro inválido, tente novamente" },
		{ "de", "Ungültiger Parameter, bitte erneut versuchen" },
		{ "fr", "Paramètre invalide, réessayez" },
		{ "zh", "该功能暂不可用于您的账户" },
	};
	static const struct said answer[] = {
		{ "zh", "上游返回无效的响应，请重试" },
		{ "es", "El servidor devolvió una respuesta inválida, reintente" },
	};

	EXPECT_ALL(rows, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(answer, CLASSIFY_RETRYABLE);
}
END_TEST

/* A token cap over a named minute or day, in any language, is a window;
 * the same cap of the model is an overflow. A load or a count of requests
 * too large is no request too large. */
START_TEST(test_a_token_cap_over_a_window_is_no_overflow_in_every_language)
{
	static const struct said minute[] = {
		{ "en", "The token count for this minute exceeds your rate limit" },
		{ "pt", "Você excedeu o limite de tokens por minuto" },
		{ "ru", "Превышен лимит токенов в минуту" },
		{ "de", "Tokenlimit pro Minute überschritten" },
		{ "fr", "Vous avez dépassé la limite de jetons par minute" },
		{ "es", "Se superó el límite de tokens por minuto" },
		{ "ja", "リクエストの負荷が大きすぎます。しばらくしてから再試行してください" },
		{ "ru", "Количество запросов слишком велико, повторите позже" },
	};
	static const struct said daily[] = {
		{ "ru", "Превышен дневной лимит токенов" },
	};
	static const struct said overflow[] = {
		{ "ru", "Ваш запрос превышает лимит токенов модели" },
		{ "pt", "O prompt excede o limite de tokens do modelo" },
	};
	const char *volume = "El volumen de solicitudes es demasiado grande";

	EXPECT_ALL(minute, CLASSIFY_RETRYABLE);
	EXPECT_ALL(daily, CLASSIFY_USAGE_LIMIT);
	EXPECT_ALL(overflow, CLASSIFY_CONTEXT_OVERFLOW);
	ck_assert_int_ne(classify_error(cls, volume, strlen(volume)), CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

/* A quota exceeded per minute is a rate window in Spanish and Portuguese too;
 * the quota of the account, in either spelling of the verb, is spent. */
START_TEST(test_a_quota_of_a_minute_exceeded_is_no_spent_quota_in_spanish_and_portuguese)
{
	static const struct said minute[] = {
		{ "es", "La solicitud ha superado tu cuota por minuto; inténtalo de nuevo en 10 segundos" },
		{ "pt", "Você excedeu sua cota por minuto, tente novamente" },
	};
	static const struct said spent[] = {
		{ "es", "Has superado tu cuota mensual" },
		{ "es", "Excediste tu cuota" },
		{ "pt", "Você excedeu sua cota" },
	};

	EXPECT_ALL(minute, CLASSIFY_RETRYABLE);
	EXPECT_ALL(spent, CLASSIFY_USAGE_LIMIT);
}
END_TEST

/* A model withheld from a region or a plan is final in every language, and
 * "please retry without images" asks for another request, not a retry; an
 * outage that is only temporary stays retried. */
START_TEST(test_a_model_withheld_from_a_region_or_plan_is_final_in_every_language)
{
	static const struct said rows[] = {
		{ "en", "This model is not available on your current plan" },
		{ "en", "The model does not support image input, please retry without images" },
		{ "zh", "该模型在您所在地区不可用" },
		{ "ja", "要求されたモデルはこの地域では利用できません" },
		{ "ko", "이 지역에서는 사용할 수 없는 모델입니다" },
		{ "ru", "Модель недоступна в вашем регионе" },
		{ "es", "El modelo no está disponible en tu región" },
		{ "pt", "O modelo não está disponível na sua região" },
		{ "de", "Das Modell ist in Ihrer Region nicht verfügbar" },
		{ "fr", "Ce modèle n'est pas disponible dans votre région" },
	};
	static const struct said outage[] = {
		{ "en", "Service temporarily unavailable, please retry with exponential backoff" },
		{ "zh", "服务暂时不可用" },
		{ "ru", "Сервис временно недоступен" },
	};

	EXPECT_ALL(rows, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(outage, CLASSIFY_RETRYABLE);
}
END_TEST

/* A server that says a retry will not help is believed over the bare
 * outage words beside it ("unavailable", 不可用, недоступен, "retry"). */
START_TEST(test_retrying_will_not_help_beats_a_bare_transient_word_in_every_language)
{
	static const struct said rows[] = {
		{ "en", "The service is unavailable right now. Retrying will not help: this model is "
			"reserved for enterprise accounts." },
		{ "en", "Network policy: do not retry this request." },
		{ "zh", "服务不可用：当前账户无法使用该功能，重试也无法解决" },
		{ "zh", "该模型在您的套餐中不可用，请勿重试" },
		{ "ja", "サービスは利用できません。再試行しても解決しません。" },
		{ "ko", "서비스를 사용할 수 없습니다. 재시도해도 해결되지 않습니다." },
		{ "ru", "Сервис недоступен. Повторная попытка не поможет." },
		{ "es", "Servicio no disponible. Reintentar no ayudará." },
		{ "pt", "Serviço indisponível. Não adianta tentar novamente." },
		{ "de", "Dienst nicht verfügbar. Erneutes Versuchen hilft nicht." },
		{ "fr", "Service indisponible. Inutile de réessayer." },
	};

	EXPECT_ALL(rows, CLASSIFY_NOT_RETRYABLE);
}
END_TEST

/* "Unavailable" or "busy" beside the account's plan, tier or region: the
 * standing is what a retry cannot change, in whatever order the words come
 * (the step-3 rows read only "unavailable in your plan"). */
START_TEST(test_a_plan_or_region_word_beats_a_bare_transient_word_in_every_language)
{
	static const struct said rows[] = {
		{ "en", "Gateway busy: your plan does not include this model" },
		{ "zh", "服务不可用：该模型未开通" },
		{ "ja", "利用できません。ご利用のプランにはこのモデルが含まれていません" },
		{ "ko", "서비스를 사용할 수 없습니다. 현재 요금제에는 이 모델이 포함되어 있지 않습니다" },
		{ "ru", "Сервис недоступен на вашем тарифе" },
		{ "es", "Servicio no disponible con su plan actual" },
		{ "pt", "Serviço indisponível no seu plano atual" },
		{ "de", "Dienst für Ihren Tarif nicht verfügbar" },
		{ "fr", "Service indisponible avec votre forfait actuel" },
	};

	EXPECT_ALL(rows, CLASSIFY_NOT_RETRYABLE);
}
END_TEST

/* A plan word mutes only the bare words: a timeout, a reset connection,
 * "temporarily", a busy model and a 503 are still retried beside it, and a
 * plan word with no failure word is no signal at all (unknown). */
START_TEST(test_a_plan_word_beside_a_real_outage_or_alone_decides_nothing)
{
	static const struct said outage[] = {
		{ "en", "Request timed out (free tier)" },
		{ "en", "Connection reset by peer; your plan: Pro" },
		{ "en", "Model busy for free tier users, retry in a moment" },
		{ "en", "HTTP 503: Service unavailable on your plan" },
		{ "zh", "暂时无法连接，您的套餐：专业版" },
		{ "zh", "网络错误，您的套餐：专业版" },
		{ "ru", "Сервис временно недоступен, ваш тариф: Про" },
		{ "de", "Zeitüberschreitung der Verbindung (Ihr Tarif: Pro)" },
	};
	static const struct said silent[] = {
		{ "en", "Your plan: Pro" },
		{ "zh", "您的套餐：专业版" },
		{ "fr", "Votre forfait : Pro" },
	};

	EXPECT_ALL(outage, CLASSIFY_RETRYABLE);
	EXPECT_ALL(silent, CLASSIFY_UNKNOWN);
}
END_TEST

/* The same facts in the other word orders and inflections of each
 * language: a rate "over its limit", a crowded server asked to be tried
 * "again" (再度), a context "exceeded" (превышен), a quota "gone past"
 * (superado), a key that "is not valid", credit "used up", a feature open
 * "only to" a plan. */
START_TEST(test_each_language_s_other_word_orders_get_the_same_verdict)
{
	static const struct said retried[] = {
		{ "zh", "接口调用频率超过限制" },
		{ "ja", "サーバーが混み合っています。しばらくしてから再度お試しください。" },
	};
	static const struct said overflow[] = {
		{ "ru", "Превышен максимальный размер контекста" },
		{ "de", "Die maximale Kontextlänge des Modells wurde überschritten" },
	};
	static const struct said spent[] = {
		{ "es", "Has superado tu cuota. Revisa tu plan y los detalles de facturación." },
		{ "fr", "Votre crédit est épuisé" },
	};
	static const struct said final[] = {
		{ "es", "La clave de API no es válida" },
		{ "pt", "A chave de API não é válida" },
		{ "fr", "La clé API n'est pas valide" },
		{ "fr", "Ce modèle n'est pas pris en charge" },
		{ "zh", "该功能仅对专业版用户开放" },
	};
	static const struct said more_zh[] = {
		{ "zh", "您的资源包已过期" },
	};
	static const struct said more_zh_rate[] = {
		{ "zh", "并发请求数超过限制" },
	};

	EXPECT_ALL(retried, CLASSIFY_RETRYABLE);
	EXPECT_ALL(overflow, CLASSIFY_CONTEXT_OVERFLOW);
	EXPECT_ALL(spent, CLASSIFY_USAGE_LIMIT);
	EXPECT_ALL(final, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(more_zh, CLASSIFY_USAGE_LIMIT);
	EXPECT_ALL(more_zh_rate, CLASSIFY_RETRYABLE);
}
END_TEST

/* More of each language's generic words: concurrency (одновременных,
 * gleichzeitige), a crowded server (혼잡) as a saturated pool, access denied
 * (拒否, verweigert, refusé, denegado), a text too long (テキストが長すぎ), a
 * quota gone past with the verb first (dépassé votre quota, превысили
 * квоту) -- and a quota of a minute gone past is a rate limit. */
START_TEST(test_concurrency_denied_access_long_texts_and_quotas_passed_in_more_words)
{
	static const struct said retried[] = {
		{ "de", "Der Antwort-Stream wurde unterbrochen. Bitte versuche es erneut." },
		{ "ru", "Превышен лимит одновременных запросов" },
		{ "de", "Zu viele gleichzeitige Anfragen" },
		{ "de", "Maximale Anzahl gleichzeitiger Anfragen erreicht" },
		{ "fr", "Vous avez dépassé votre quota par minute" },
		{ "es", "Has superado tu cuota por minuto" },
	};
	static const struct said final[] = {
		{ "ja", "アクセスが拒否されました" },
		{ "ko", "접근이 거부되었습니다" },
		{ "es", "Permiso denegado" },
		{ "es", "Acceso denegado" },
		{ "pt", "Acesso negado" },
		{ "de", "Zugriff verweigert" },
		{ "fr", "Accès refusé" },
		{ "zh", "输入包含不当内容" },
	};
	static const struct said overflow[] = {
		{ "ja", "テキストが長すぎます" },
		{ "ja", "メッセージが長すぎます。短くしてください" },
	};
	static const struct said spent[] = {
		{ "fr", "Vous avez dépassé votre quota" },
		{ "ru", "Вы превысили квоту" },
		{ "ru", "Вы превысили свой лимит использования" },
	};
	struct classify_input in = { .text = "서버가 혼잡합니다", .len = strlen("서버가 혼잡합니다") };
	struct classify_result out;

	EXPECT_ALL(retried, CLASSIFY_RETRYABLE);
	EXPECT_ALL(final, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(overflow, CLASSIFY_CONTEXT_OVERFLOW);
	EXPECT_ALL(spent, CLASSIFY_USAGE_LIMIT);
	classify_decide(cls, &in, &out);
	ck_assert_msg(out.verdict == CLASSIFY_RETRYABLE && out.overload, "ko: %s overload %d (rule %s)",
		      classify_class_name(out.verdict), out.overload, out.rule);
}
END_TEST

/* A chat front end's own notices in each language: the server could not be
 * reached (retried), the plan's message limit reached (a usage limit, a
 * minute's message cap a rate), the conversation too long (an overflow), a
 * failed generation to be generated again (retried). */
START_TEST(test_a_front_end_s_connect_message_limit_and_long_chat_notices_in_every_language)
{
	static const struct said unreachable[] = {
		{ "zh", "连接服务器失败" },
		{ "zh", "服务器无响应" },
		{ "zh", "生成失败，请重新生成" },
		{ "ja", "サーバーに接続できません" },
		{ "ko", "서버에 연결할 수 없습니다" },
		{ "es", "No se pudo conectar con el servidor" },
		{ "pt", "Não foi possível conectar ao servidor" },
		{ "fr", "Impossible de se connecter au serveur" },
		{ "ru", "Не удалось подключиться к серверу" },
		{ "zh", "每分钟消息数已达上限" },
	};
	static const struct said capped[] = {
		{ "zh", "您已达到消息上限" },
		{ "ja", "メッセージの上限に達しました" },
		{ "ko", "메시지 한도에 도달했습니다" },
		{ "es", "Has alcanzado el límite de mensajes" },
		{ "pt", "Você atingiu o limite de mensagens" },
		{ "de", "Du hast das Nachrichtenlimit erreicht" },
		{ "fr", "Vous avez atteint la limite de messages" },
		{ "ru", "Вы достигли лимита сообщений" },
	};
	static const struct said long_chat[] = {
		{ "zh", "会话过长，请开启新会话" },
		{ "ko", "대화가 너무 깁니다" },
	};

	EXPECT_ALL(unreachable, CLASSIFY_RETRYABLE);
	EXPECT_ALL(capped, CLASSIFY_USAGE_LIMIT);
	EXPECT_ALL(long_chat, CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

/* A message or request cap over a minute is a rate limit in every language, over an hour a plan
 * window (as "hourly message limit" is), over a day a plan window too: the window decides, not
 * the words "message limit". */
START_TEST(test_a_message_cap_per_minute_waits_and_per_hour_or_day_is_a_usage_limit_in_every_language)
{
	static const struct said per_minute[] = {
		{ "ja", "1分あたりのメッセージ上限に達しました" },
		{ "ja", "分あたりのリクエスト数の上限に達しました" },
		{ "ja", "毎秒のリクエスト上限を超えました" },
		{ "es", "Límite de mensajes por minuto alcanzado" },
		{ "pt", "Limite de requisições por minuto atingido" },
		{ "fr", "Limite de requêtes par minute dépassée" },
		{ "de", "Nachrichtenlimit pro Minute erreicht" },
		{ "ru", "Лимит сообщений в минуту исчерпан" },
	};
	static const struct said per_hour_or_day[] = {
		{ "zh", "每小时消息上限已达到" },
		{ "zh", "每小时请求次数已达上限" },
		{ "ja", "1時間あたりのメッセージ上限に達しました" },
		{ "ko", "시간당 메시지 한도에 도달했습니다" },
		{ "es", "Límite de mensajes por hora alcanzado" },
		{ "fr", "Limite de messages par heure atteinte" },
		{ "de", "Anfragelimit pro Stunde erreicht" },
		{ "ru", "Лимит запросов в час исчерпан" },
		{ "en", "You've hit the per-hour message cap" },
		{ "ja", "今日のメッセージの上限に達しました" },
	};

	EXPECT_ALL(per_minute, CLASSIFY_RETRYABLE);
	EXPECT_ALL(per_hour_or_day, CLASSIFY_USAGE_LIMIT);
}
END_TEST

/* Eight more languages, probed with sentences of the shapes the others have: Italian, Turkish,
 * Vietnamese, Indonesian, Polish, Dutch, Ukrainian and Arabic. A wait that lasted too long is a
 * slow server, a quota of a minute a rate, a refusal that ends "try again later" final. */
START_TEST(test_eight_more_languages_say_overload_rate_quota_refusal_overflow_and_cut_connections)
{
	static const struct said retryable[] = {
		{ "it", "Il server è sovraccarico, riprova più tardi" },
		{ "it", "Troppe richieste, riprova tra qualche secondo" },
		{ "it", "Limite di richieste al minuto superato" },
		{ "it", "Impossibile connettersi al server" },
		{ "tr", "Sunucu aşırı yüklü, lütfen daha sonra tekrar deneyin" },
		{ "tr", "Çok fazla istek, lütfen daha sonra tekrar deneyin" },
		{ "tr", "Sunucuya bağlanılamadı" },
		{ "vi", "Máy chủ đang quá tải, vui lòng thử lại sau" },
		{ "vi", "Quá nhiều yêu cầu, vui lòng thử lại sau" },
		{ "vi", "Không thể kết nối đến máy chủ" },
		{ "id", "Server sedang kelebihan beban, silakan coba lagi nanti" },
		{ "id", "Terlalu banyak permintaan, silakan coba lagi nanti" },
		{ "id", "Tidak dapat terhubung ke server" },
		{ "pl", "Serwer jest przeciążony, spróbuj ponownie później" },
		{ "pl", "Zbyt wiele żądań, spróbuj ponownie później" },
		{ "pl", "Nie można połączyć się z serwerem" },
		{ "nl", "De server is overbelast, probeer het later opnieuw" },
		{ "nl", "Te veel verzoeken, probeer het later opnieuw" },
		{ "nl", "Kan geen verbinding maken met de server" },
		{ "uk", "Сервер перевантажений, спробуйте пізніше" },
		{ "uk", "Забагато запитів, спробуйте пізніше" },
		{ "ar", "الخادم مثقل، يرجى المحاولة لاحقًا" },
		{ "ar", "طلبات كثيرة جدًا، يرجى المحاولة لاحقًا" },
		{ "it", "La richiesta ha impiegato troppo tempo, riprova" },
		{ "nl", "Het verzoek duurde te lang, probeer het opnieuw" },
		{ "tr", "İstek çok uzun sürdü" },
		{ "pl", "Przekroczono limit czasu żądania" },
		{ "pl", "Przekroczono limit żądań na minutę" },
		{ "tr", "Dakikadaki istek kotanız aşıldı" },
		{ "id", "Kuota per menit terlampaui" },
		{ "it", "Errore del server (500)" },
		{ "it", "Connessione interrotta" },
		{ "tr", "Bağlantı zaman aşımına uğradı" },
		{ "vi", "Kết nối bị gián đoạn" },
		{ "id", "Koneksi terputus" },
		{ "pl", "Połączenie zostało przerwane" },
		{ "nl", "Verbinding verbroken" },
		{ "uk", "З'єднання перервано" },
		{ "ar", "انقطع الاتصال بالخادم" },
		{ "it", "Servizio temporaneamente non disponibile" },
		{ "tr", "Hizmet geçici olarak kullanılamıyor" },
		{ "vi", "Dịch vụ tạm thời không khả dụng" },
		{ "id", "Layanan untuk sementara tidak tersedia" },
		{ "pl", "Usługa jest tymczasowo niedostępna" },
		{ "nl", "Service tijdelijk niet beschikbaar" },
		{ "uk", "Сервіс тимчасово недоступний" },
		{ "ar", "الخدمة غير متاحة مؤقتًا" },
	};
	static const struct said usage_limit[] = {
		{ "it", "Credito insufficiente" },
		{ "it", "Hai raggiunto il limite di utilizzo giornaliero" },
		{ "it", "Quota esaurita" },
		{ "tr", "Yetersiz bakiye" },
		{ "tr", "Günlük kullanım limitinize ulaştınız" },
		{ "vi", "Số dư không đủ" },
		{ "vi", "Bạn đã đạt giới hạn sử dụng hàng ngày" },
		{ "id", "Saldo tidak mencukupi" },
		{ "id", "Anda telah mencapai batas penggunaan harian" },
		{ "pl", "Niewystarczające środki na koncie" },
		{ "pl", "Osiągnięto dzienny limit użycia" },
		{ "nl", "Onvoldoende tegoed" },
		{ "nl", "Je hebt je dagelijkse gebruikslimiet bereikt" },
		{ "uk", "Недостатньо коштів на балансі" },
		{ "ar", "رصيد غير كافٍ" },
		{ "it", "Il tuo credito è esaurito. Ricarica il tuo account." },
		{ "it", "Limite mensile raggiunto" },
		{ "vi", "Hạn mức sử dụng hàng tháng đã hết" },
		{ "id", "Anda telah kehabisan kuota" },
		{ "pl", "Przekroczono miesięczny limit wykorzystania" },
		{ "nl", "Uw tegoed is op" },
		{ "uk", "Ви вичерпали денний ліміт" },
		{ "ar", "لقد تجاوزت الحصة المخصصة لك" },
	};
	static const struct said non_retryable[] = {
		{ "it", "Chiave API non valida" },
		{ "it", "Accesso negato" },
		{ "tr", "Geçersiz API anahtarı" },
		{ "vi", "Khóa API không hợp lệ" },
		{ "id", "Kunci API tidak valid" },
		{ "pl", "Nieprawidłowy klucz API" },
		{ "nl", "Ongeldige API-sleutel" },
		{ "uk", "Недійсний ключ API" },
		{ "ar", "مفتاح API غير صالح" },
		{ "it", "Non hai i permessi per accedere a questo modello. Riprova più tardi." },
		{ "tr", "Bu modele erişim izniniz yok, lütfen tekrar deneyin" },
		{ "it", "Modello non trovato" },
		{ "tr", "Model bulunamadı" },
		{ "vi", "Không tìm thấy mô hình" },
		{ "id", "Model tidak ditemukan" },
		{ "pl", "Nie znaleziono modelu" },
		{ "nl", "Model niet gevonden" },
		{ "uk", "Модель не знайдено" },
		{ "ar", "النموذج غير موجود" },
	};
	static const struct said context_overflow[] = {
		{ "it", "Il messaggio è troppo lungo" },
		{ "it", "La richiesta supera la lunghezza massima del contesto" },
		{ "tr", "Mesaj çok uzun" },
		{ "vi", "Tin nhắn quá dài" },
		{ "id", "Pesan terlalu panjang" },
		{ "pl", "Wiadomość jest zbyt długa" },
		{ "nl", "Het bericht is te lang" },
		{ "ar", "الرسالة طويلة جدًا" },
		{ "it", "Il prompt supera la lunghezza massima del contesto del modello" },
		{ "tr", "Girdi, modelin maksimum bağlam uzunluğunu aşıyor" },
		{ "vi", "Đầu vào vượt quá giới hạn độ dài ngữ cảnh" },
		{ "id", "Input melebihi batas panjang konteks model" },
		{ "pl", "Dane wejściowe przekraczają maksymalną długość kontekstu" },
		{ "nl", "De invoer overschrijdt de maximale contextlengte" },
		{ "uk", "Запит перевищує максимальну довжину контексту" },
		{ "ar", "يتجاوز الطلب الحد الأقصى لطول السياق" },
	};

	EXPECT_ALL(retryable, CLASSIFY_RETRYABLE);
	EXPECT_ALL(usage_limit, CLASSIFY_USAGE_LIMIT);
	EXPECT_ALL(non_retryable, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(context_overflow, CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

/* The same eight languages, and Swedish, Norwegian and Danish, in a front end's notices: a region
 * not served, a wrong or empty access code or key (final though it ends "try again"), a model that
 * does not exist, an account deactivated; a stream that could not be parsed, a server error, a
 * gateway timeout; a quota used up with a top-up asked for; a context window exceeded. */
START_TEST(test_a_front_end_s_notices_in_eleven_more_languages)
{
	static const struct said retryable[] = {
		{ "it", "Errore durante l'analisi dei dati in streaming, riprova" },
		{ "tr", "Akış verileri ayrıştırılırken hata oluştu" },
		{ "vi", "Lỗi khi phân tích dữ liệu luồng" },
		{ "id", "Terjadi kesalahan saat mengurai data streaming" },
		{ "pl", "Błąd podczas przetwarzania danych strumieniowych" },
		{ "nl", "Fout bij het verwerken van streaminggegevens" },
		{ "uk", "Помилка під час розбору потокових даних" },
		{ "ar", "حدث خطأ أثناء تحليل بيانات البث" },
		{ "it", "Errore interno del server" },
		{ "tr", "Dahili sunucu hatası" },
		{ "vi", "Lỗi máy chủ nội bộ" },
		{ "id", "Kesalahan server internal" },
		{ "pl", "Wewnętrzny błąd serwera" },
		{ "nl", "Interne serverfout" },
		{ "uk", "Внутрішня помилка сервера" },
		{ "ar", "خطأ داخلي في الخادم" },
		{ "it", "Timeout del gateway, riprova più tardi" },
		{ "tr", "Ağ geçidi zaman aşımı" },
		{ "vi", "Cổng kết nối hết thời gian chờ" },
		{ "id", "Gateway timeout, silakan coba lagi" },
		{ "pl", "Przekroczono czas oczekiwania bramy" },
		{ "nl", "Gateway-time-out" },
		{ "uk", "Тайм-аут шлюзу" },
		{ "ar", "انتهت مهلة البوابة" },
		{ "sv", "Ett nätverksfel inträffade, försök igen senare" },
		{ "sv", "För många förfrågningar, försök igen senare" },
		{ "sv", "Servern är överbelastad" },
		{ "nb", "For mange forespørsler, prøv igjen senere" },
		{ "da", "For mange anmodninger, prøv igen senere" },
	};
	static const struct said usage_limit[] = {
		{ "it", "La quota è stata esaurita, ricarica il credito" },
		{ "tr", "Kotanız doldu, lütfen bakiye yükleyin" },
		{ "vi", "Hạn mức đã hết, vui lòng nạp thêm tiền" },
		{ "id", "Kuota Anda telah habis, silakan isi ulang saldo" },
		{ "pl", "Twój limit został wyczerpany, doładuj konto" },
		{ "nl", "Je quotum is op, waardeer je tegoed op" },
		{ "uk", "Вашу квоту вичерпано, поповніть рахунок" },
		{ "ar", "لقد نفدت حصتك، يرجى شحن رصيدك" },
		{ "sv", "Otillräckligt saldo" },
		{ "nb", "Utilstrekkelig saldo" },
	};
	static const struct said non_retryable[] = {
		{ "it", "Questa regione non è supportata dal fornitore del servizio" },
		{ "tr", "Bu bölge hizmet sağlayıcı tarafından desteklenmiyor" },
		{ "vi", "Khu vực của bạn không được nhà cung cấp hỗ trợ" },
		{ "id", "Wilayah Anda tidak didukung oleh penyedia layanan" },
		{ "pl", "Twój region nie jest obsługiwany przez dostawcę" },
		{ "nl", "Uw regio wordt niet ondersteund door de provider" },
		{ "uk", "Ваш регіон не підтримується постачальником" },
		{ "ar", "منطقتك غير مدعومة من قبل مزود الخدمة" },
		{ "it", "Il codice di accesso non è corretto o è vuoto" },
		{ "tr", "Erişim kodu yanlış veya boş" },
		{ "vi", "Mã truy cập không đúng hoặc để trống" },
		{ "id", "Kode akses salah atau kosong" },
		{ "pl", "Kod dostępu jest nieprawidłowy lub pusty" },
		{ "nl", "De toegangscode is onjuist of leeg" },
		{ "uk", "Код доступу неправильний або порожній" },
		{ "ar", "رمز الوصول غير صحيح أو فارغ" },
		{ "it", "La chiave API è errata o vuota, controlla e riprova" },
		{ "tr", "API anahtarı yanlış veya boş, lütfen kontrol edip tekrar deneyin" },
		{ "vi", "Khóa API không chính xác hoặc trống, vui lòng kiểm tra và thử lại" },
		{ "id", "Kunci API salah atau kosong, silakan periksa dan coba lagi" },
		{ "pl", "Klucz API jest niepoprawny lub pusty, sprawdź i spróbuj ponownie" },
		{ "nl", "De API-sleutel is onjuist of leeg, controleer en probeer het opnieuw" },
		{ "uk", "Ключ API неправильний або порожній, перевірте та спробуйте ще раз" },
		{ "ar", "مفتاح API غير صحيح أو فارغ، يرجى التحقق والمحاولة مرة أخرى" },
		{ "it", "Il modello richiesto non esiste" },
		{ "tr", "İstenen model mevcut değil" },
		{ "vi", "Mô hình được yêu cầu không tồn tại" },
		{ "id", "Model yang diminta tidak ada" },
		{ "pl", "Żądany model nie istnieje" },
		{ "nl", "Het gevraagde model bestaat niet" },
		{ "uk", "Запитувана модель не існує" },
		{ "ar", "النموذج المطلوب غير موجود" },
		{ "it", "Il tuo account è stato disattivato" },
		{ "tr", "Hesabınız devre dışı bırakıldı" },
		{ "vi", "Tài khoản của bạn đã bị vô hiệu hóa" },
		{ "id", "Akun Anda telah dinonaktifkan" },
		{ "pl", "Twoje konto zostało dezaktywowane" },
		{ "nl", "Je account is gedeactiveerd" },
		{ "uk", "Ваш обліковий запис деактивовано" },
		{ "ar", "تم تعطيل حسابك" },
		{ "sv", "Ogiltig API-nyckel" },
		{ "nb", "Ugyldig API-nøkkel" },
		{ "da", "Ugyldig API-nøgle" },
	};
	static const struct said context_overflow[] = {
		{ "it", "Il contenuto supera la finestra di contesto del modello" },
		{ "tr", "İçerik, modelin bağlam penceresini aşıyor" },
		{ "vi", "Nội dung vượt quá cửa sổ ngữ cảnh của mô hình" },
		{ "id", "Konten melebihi jendela konteks model" },
		{ "pl", "Treść przekracza okno kontekstu modelu" },
		{ "nl", "De inhoud overschrijdt het contextvenster van het model" },
		{ "uk", "Вміст перевищує контекстне вікно моделі" },
		{ "ar", "يتجاوز المحتوى نافذة السياق للنموذج" },
		{ "sv", "Meddelandet är för långt" },
		{ "nb", "Meldingen er for lang" },
		{ "da", "Beskeden er for lang" },
	};

	EXPECT_ALL(retryable, CLASSIFY_RETRYABLE);
	EXPECT_ALL(usage_limit, CLASSIFY_USAGE_LIMIT);
	EXPECT_ALL(non_retryable, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(context_overflow, CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

/* A front end's notices for the statuses, as LobeChat-like front ends word them, in English and
 * eight more languages: requests too frequent (a rate), a server with issues or no answer from
 * upstream (retried), not logged in (final), the request's data too large (an overflow). */
START_TEST(test_a_front_end_s_status_notices_too_frequent_no_answer_not_logged_in_too_large)
{
	static const struct said retryable[] = {
		{ "en", "Sorry, your request is too frequent, the server is a bit tired" },
		{ "en", "Request frequency too high" },
		{ "it", "Le richieste sono troppo frequenti, riprova più tardi" },
		{ "tr", "İstekleriniz çok sık, sunucu biraz yoruldu" },
		{ "vi", "Yêu cầu của bạn quá thường xuyên" },
		{ "id", "Permintaan Anda terlalu sering" },
		{ "pl", "Zbyt częste żądania, serwer jest zmęczony" },
		{ "nl", "Je verzoeken zijn te vaak verzonden" },
		{ "uk", "Ваші запити надто часті" },
		{ "ar", "طلباتك متكررة جدًا" },
		{ "en", "Sorry, the server seems to be experiencing some issues" },
		{ "it", "Il server sembra avere dei problemi" },
		{ "tr", "Sunucuda bazı sorunlar var gibi görünüyor" },
		{ "vi", "Máy chủ dường như đang gặp sự cố" },
		{ "id", "Server tampaknya sedang mengalami masalah" },
		{ "pl", "Serwer wydaje się mieć problemy" },
		{ "nl", "De server lijkt problemen te ondervinden" },
		{ "uk", "Сервер, схоже, має проблеми" },
		{ "ar", "يبدو أن الخادم يواجه بعض المشاكل" },
		{ "it", "Il server non ha ricevuto risposta dal server upstream" },
		{ "tr", "Sunucu, yukarı akış sunucusundan yanıt alamadı" },
		{ "vi", "Máy chủ không nhận được phản hồi từ máy chủ thượng nguồn" },
		{ "id", "Server tidak menerima respons dari server hulu" },
		{ "pl", "Serwer nie otrzymał odpowiedzi od serwera nadrzędnego" },
		{ "nl", "De server heeft geen antwoord ontvangen van de upstream-server" },
		{ "uk", "Сервер не отримав відповіді від вищестоящого сервера" },
		{ "ar", "لم يتلق الخادم ردًا من الخادم الرئيسي" },
	};
	static const struct said non_retryable[] = {
		{ "en", "Sorry, you are not currently logged in" },
		{ "en", "Please log in first" },
		{ "en", "Login required" },
		{ "it", "Non hai ancora effettuato l'accesso" },
		{ "tr", "Henüz giriş yapmadınız" },
		{ "vi", "Bạn chưa đăng nhập" },
		{ "id", "Anda belum masuk" },
		{ "pl", "Nie jesteś zalogowany" },
		{ "nl", "Je bent niet ingelogd" },
		{ "uk", "Ви не ввійшли в систему" },
		{ "ar", "لم تقم بتسجيل الدخول بعد" },
	};
	static const struct said context_overflow[] = {
		{ "en", "Sorry, the request data is too large" },
		{ "it", "I dati della richiesta sono troppo grandi" },
		{ "tr", "İstek verisi çok büyük" },
		{ "vi", "Dữ liệu yêu cầu quá lớn" },
		{ "id", "Data permintaan terlalu besar" },
		{ "pl", "Dane żądania są zbyt duże" },
		{ "nl", "De verzoekgegevens zijn te groot" },
		{ "uk", "Дані запиту занадто великі" },
		{ "ar", "بيانات الطلب كبيرة جدًا" },
	};

	EXPECT_ALL(retryable, CLASSIFY_RETRYABLE);
	EXPECT_ALL(non_retryable, CLASSIFY_NOT_RETRYABLE);
	EXPECT_ALL(context_overflow, CLASSIFY_CONTEXT_OVERFLOW);
}
END_TEST

Suite *classify_i18n_suite(void)
{
	Suite *s = suite_create("classify_i18n");
	TCase *tc = tcase_create("languages");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_a_refusal_ending_in_try_again_is_final_in_every_language);
	tcase_add_test(tc, test_a_localized_refusal_word_gives_way_to_a_server_status);
	tcase_add_test(tc, test_a_server_side_failure_is_retried_in_every_language);
	tcase_add_test(tc, test_a_request_too_large_is_an_overflow_in_every_language);
	tcase_add_test(tc, test_a_spent_plan_or_balance_is_a_usage_limit_in_every_language);
	tcase_add_test(tc, test_a_generic_permanent_word_is_final_when_nothing_else_speaks);
	tcase_add_test(tc, test_a_front_ends_translated_notices_are_judged_in_every_language);
	tcase_add_test(tc, test_too_many_requests_or_too_high_a_demand_is_no_overflow);
	tcase_add_test(tc, test_a_token_cap_over_a_day_or_a_minute_is_no_overflow);
	tcase_add_test(tc, test_too_long_a_wait_or_too_large_a_response_is_no_overflow);
	tcase_add_test(tc, test_a_refusal_word_beats_a_trailing_retry_word);
	tcase_add_test(tc, test_a_busy_free_model_or_a_full_gpu_is_no_spent_plan);
	tcase_add_test(tc, test_a_generic_refusal_beats_a_trailing_retry_in_every_language);
	tcase_add_test(tc, test_a_token_cap_over_a_window_is_no_overflow_in_every_language);
	tcase_add_test(tc, test_a_quota_of_a_minute_exceeded_is_no_spent_quota_in_spanish_and_portuguese);
	tcase_add_test(tc, test_a_model_withheld_from_a_region_or_plan_is_final_in_every_language);
	tcase_add_test(tc, test_retrying_will_not_help_beats_a_bare_transient_word_in_every_language);
	tcase_add_test(tc, test_a_plan_or_region_word_beats_a_bare_transient_word_in_every_language);
	tcase_add_test(tc, test_a_plan_word_beside_a_real_outage_or_alone_decides_nothing);
	tcase_add_test(tc, test_each_language_s_other_word_orders_get_the_same_verdict);
	tcase_add_test(tc, test_expired_tokens_short_quotas_rate_words_and_saturation_in_other_sentences);
	tcase_add_test(tc, test_concurrency_denied_access_long_texts_and_quotas_passed_in_more_words);
	tcase_add_test(tc, test_a_front_end_s_connect_message_limit_and_long_chat_notices_in_every_language);
	tcase_add_test(tc, test_a_message_cap_per_minute_waits_and_per_hour_or_day_is_a_usage_limit_in_every_language);
	tcase_add_test(tc, test_eight_more_languages_say_overload_rate_quota_refusal_overflow_and_cut_connections);
	tcase_add_test(tc, test_a_front_end_s_notices_in_eleven_more_languages);
	tcase_add_test(tc, test_a_front_end_s_status_notices_too_frequent_no_answer_not_logged_in_too_large);
	suite_add_tcase(s, tc);
	return s;
}
